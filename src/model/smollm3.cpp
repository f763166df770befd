// smollm3: SmolLM3 (GGUF "smollm3"). The llama layer (RoPE `normal`, GGUF Q/K permuted)
// except that every no_rope_layer_step-th layer (llama.cpp hard-codes 4: layers 3, 7, 11,
// ...) attends without rotary embedding: q and k go to the cache as projected.
#include "model/block_ops.hpp"

namespace vks::model {
namespace {

void record_smollm3_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                          const step_views& s) {
  const bool rope = c.no_rope_layer_step <= 0 || (s.layer + 1) % c.no_rope_layer_step != 0;
  record_qkv(be, c, w, s);
  record_attention(be, c, w, kv, s, rope, /*ffn_norms_x=*/true);
  record_swiglu_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_smollm3{"smollm3", &record_smollm3_layer};

}  // namespace vks::model
