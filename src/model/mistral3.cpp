// mistral3: Mistral Small 3.x / Ministral 3 text decoders (GGUF "mistral3"). The llama
// layer (RoPE `normal`, GGUF Q/K permuted), usually with YaRN scaling (config.cpp; the
// yarn magnitude as for every architecture: checked against llama.cpp in
// test_families.cpp). The llama-4-style attention temperature
// (attention.temperature_scale) is refused at load.
#include "model/block_ops.hpp"

namespace vks::model {
namespace {

void record_mistral3_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                           const step_views& s) {
  record_qkv(be, c, w, s);
  record_attention(be, c, w, kv, s, /*rope=*/true, /*ffn_norms_x=*/true);
  record_swiglu_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_mistral3{"mistral3", &record_mistral3_layer};

}  // namespace vks::model
