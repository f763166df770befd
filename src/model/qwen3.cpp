// qwen3: Qwen3 (dense). The llama layer without QKV bias, with a per-head RMSNorm of q and
// k (weights {D}, shared by all heads) applied after projection and before RoPE (the
// config's qk_norm: record_attention fuses it with RoPE and the cache write); head_dim is
// independent of C (Qwen3-0.6B: C 1024, H 16, D 128). RoPE layout `neox`.
#include "model/block_ops.hpp"

namespace vks::model {
namespace {

void record_qwen3_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                        const step_views& s) {
  record_qkv(be, c, w, s);
  record_attention(be, c, w, kv, s, /*rope=*/true, /*ffn_norms_x=*/true);
  record_swiglu_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_qwen3{"qwen3", &record_qwen3_layer};

}  // namespace vks::model
