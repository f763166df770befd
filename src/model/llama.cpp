// llama: Llama 2/3.x, TinyLlama, SmolLM2, Mistral-style. Pre-norm decoder layer:
//   x += Wo . attn(rope(Wq.n(x)), rope(Wk.n(x)), Wv.n(x));  x += Wd . (silu(Wg.n(x)) * Wu.n(x))
// RoPE: GGUF llama Q/K rows are permuted by the converter for `normal` (adjacent pair)
// rotation; HF checkpoints are not, so config_from_hf_json selects `neox` for them.
// Optional QKV bias (HF attention_bias = true) is added when the config has it (record_qkv).
#include "model/block_ops.hpp"

namespace vks::model {
namespace {

void record_llama_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                        const step_views& s) {
  record_qkv(be, c, w, s);
  record_attention(be, c, w, kv, s, /*rope=*/true, /*ffn_norms_x=*/true);
  record_swiglu_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_llama{"llama", &record_llama_layer};

}  // namespace vks::model
