// qwen3: Qwen3 (dense). The llama layer without QKV bias, with a per-head RMSNorm of q and
// k (weights {D}, shared by all heads) applied after projection and before RoPE; head_dim
// is independent of C (Qwen3-0.6B: C 1024, H 16, D 128). RoPE layout `neox`.
#include "model/block_ops.hpp"

namespace vks::model {
namespace {

void record_qwen3_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                        const step_views& s) {
  const int64_t T = s.n_tokens, D = c.head_dim;
  record_qkv(be, c, w, s);
  // Rows of D: one per (head, token).
  be.rms_norm(s.qn.view({D, int64_t{c.n_head} * T, 1, 1}), s.q.view({D, int64_t{c.n_head} * T, 1, 1}), w.q_norm, c.rms_eps);
  be.rms_norm(s.kn.view({D, int64_t{c.n_head_kv} * T, 1, 1}), s.k.view({D, int64_t{c.n_head_kv} * T, 1, 1}), w.k_norm,
              c.rms_eps);
  record_attention(be, c, w, kv, s, s.qn, s.kn);
  record_swiglu_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_qwen3{"qwen3", &record_qwen3_layer};

}  // namespace vks::model
