// qwen2: Qwen2 / Qwen2.5. The llama layer with a bias on the Q, K and V projections
// (broadcast over tokens; the config's qkv_bias, added by record_qkv, fused into the stacked
// projection) and RoPE in `neox` layout (GGUF qwen2 Q/K are not permuted).
#include "model/block_ops.hpp"

namespace vks::model {
namespace {

void record_qwen2_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                        const step_views& s) {
  record_qkv(be, c, w, s);
  record_attention(be, c, w, kv, s, /*rope=*/true, /*ffn_norms_x=*/true);
  record_swiglu_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_qwen2{"qwen2", &record_qwen2_layer};

}  // namespace vks::model
