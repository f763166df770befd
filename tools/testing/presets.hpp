// llama.cpp's quantization presets ("ftypes") as per-tensor weight types for the test-model
// generator, so tests and benchmarks can make files with the same type mix as the GGUF
// files users download (Q4_K_M = q4_K + q6_K for output, some attn_v and ffn_down, ...).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/dtype.hpp"
#include "model/config.hpp"

namespace vks::model {

// Known preset names: Q4_K_M, Q4_K_S, Q5_K_M, Q3_K_M, Q2_K, IQ4_XS, MXFP4, and the low-bit
// i-quant mixes IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_M, IQ1_S, IQ1_M (llama.cpp's rules without an
// importance matrix) and UD-Q2_K_XL (an Unsloth-style dynamic mix, presets.cpp).
std::vector<std::string> test_preset_names();
bool is_test_preset(std::string_view preset);

// The type of the 2-D tensor `name` (GGUF name, rows of n_cols elements) under `preset`,
// following llama.cpp's llama_tensor_get_type rules for a dense model of config `c`
// (use_more_bits layer pattern, GQA bumps, tied embeddings as the output), then its
// fallbacks for rows the block does not divide (q4_K -> q5_0, q5_K -> q5_1, q6_K -> q8_0,
// q2_K/q3_K -> q4_0, iq4_xs and the grid i-quants -> iq4_nl, and f16 when 32 does not divide
// either).
// MXFP4 is llama.cpp's MXFP4_MOE made meaningful for a dense model: the FFN matrices (what
// gpt-oss stores as mxfp4 experts) mxfp4, everything else q8_0.
gpu::dtype preset_tensor_type(std::string_view preset, const model_config& c, std::string_view name, int64_t n_cols);

}  // namespace vks::model
