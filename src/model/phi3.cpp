// phi3: Phi-3 / Phi-3.5 / Phi-4-mini (GGUF general.architecture "phi3"). The llama layer
// with llama.cpp's phi3 facts: q, k, v come from one fused attn_qkv.weight (or three
// separate tensors) and the FFN's gate and up from one ffn_up.weight {C, 2F} (gate rows
// first: llama.cpp's swiglu of the halves); the loader keeps both as the stacked wqkv and
// w_gate_up that other families get by stacking (weights.cpp), so the shared ops run them
// as one matmul each.
// RoPE `neox`; no biases. LongRoPE factor tensors are refused at load (config.cpp).
#include "model/block_ops.hpp"

namespace vks::model {
namespace {

void record_phi3_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                       const step_views& s) {
  record_qkv(be, c, w, s);
  record_attention(be, c, w, kv, s, /*rope=*/true, /*ffn_norms_x=*/true);
  record_swiglu_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_phi3{"phi3", &record_phi3_layer};

}  // namespace vks::model
