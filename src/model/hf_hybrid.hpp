// Qwen3.5 (dense, MoE) and Qwen3-Next in Hugging Face layout: the HF names of their GGUF
// tensors, and the conversions llama.cpp's converter applies (zero-centred RMSNorm weights
// + 1, A_log -> -exp(A_log), the conv kernel squeezed, Qwen3.5's value heads reordered from
// grouped-by-key-head to tiled), done at load so the weights match the GGUF of the same model.
#pragma once

#include <string>
#include <string_view>

#include "base/result.hpp"
#include "model/config.hpp"
#include "model/model_file.hpp"

namespace vks::model {

// The HF name under model.layers.<L>. of a hybrid layer's GGUF tensor suffix (e.g.
// "ssm_out.weight" -> "linear_attn.out_proj.weight"); "" when it is not one of the
// hybrid-only names (attention and per-expert names are the common ones).
std::string hf_hybrid_layer_name(std::string_view gguf_suffix, const model_config& c);

// `raw` (the HF tensor read under GGUF name `g`, shape in ggml order) brought to the GGUF
// layout and values for c.arch in {qwen35, qwen35moe, qwen3next}; raw unchanged when no
// conversion applies. errc::parse if its shape does not fit the config.
result<weight_ref> hf_hybrid_convert(const model_config& c, std::string_view g, weight_ref raw);

}  // namespace vks::model
