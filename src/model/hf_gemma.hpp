// Gemma 3 and Gemma 4 checkpoints in Hugging Face layout (facts from transformers'
// Gemma3TextConfig / Gemma4TextConfig and Gemma4 model, and llama.cpp's converters Gemma3Model /
// Gemma4Model): the text part of config.json with transformers' defaults written in, Gemma 4's
// keys read into model_config, the HF names of Gemma 4's own GGUF tensors, and rope_freqs.weight,
// which llama.cpp's converter computes from the config (the checkpoint has no such tensor).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "model/config.hpp"
#include "model/model_file.hpp"

namespace vks::model {

// The text part of a Gemma 3 / Gemma 4 config.json (`j`: its text_config, or the whole file of a
// text-only class) as config_from_hf_json reads it: every key transformers' Gemma3TextConfig /
// Gemma4TextConfig gives a default and `j` leaves out, written in with that default (published
// multimodal Gemma 3 checkpoints list only the few keys that differ); for Gemma 3, transformers
// 5's per-layer-type rope_parameters ({"full_attention": {...}, "sliding_attention": {...}}) read
// as rope_theta, rope_scaling (the global layers') and rope_local_base_freq. Other `arch`es: j
// as it is. errc::parse / errc::unsupported for rope_parameters that cannot be read so.
result<nlohmann::json> hf_gemma_text_config(std::string_view arch, const nlohmann::json& j);

// Gemma 4 from its text config (after hf_gemma_text_config), into the fields config_from_gguf
// fills from a gemma4 GGUF: layer_types as swa_layers, sliding_window, head_dim (sliding) and
// global_head_dim, num_key_value_heads and num_global_key_value_heads (attention_k_eq_v),
// rope_parameters per layer type (sliding: default rope over the whole head; global:
// proportional rope, its unrotated pairs as rope_freq_factors of 1e30, its factor a linear
// scaling), final_logit_softcapping (null: none), hidden_size_per_layer_input, and
// num_kv_shared_layers (transformers' source of a shared layer, the last earlier layer of its
// type, must be llama.cpp's). Refused with a clear error: what the Gemma 4 layer does not run
// (sliding and global heads of different shapes, MoE blocks, double-wide MLPs on the shared
// layers, attention biases, bidirectional attention, other rope types).
result<void> gemma4_from_hf(const nlohmann::json& j, model_config& c);

// The HF name (in Gemma4ForCausalLM's layout, under "model.") of a Gemma 4 GGUF tensor that
// other families do not have (per-layer embeddings, layer_output_scale); "" for the others.
std::string hf_gemma4_name(std::string_view gguf_name);

// rope_freqs.weight of a HF directory whose config gives rope_freq_factors (Gemma 4's
// proportional rope): an f32 {n} vector owned by the ref; nullopt for any other name or config.
std::optional<weight_ref> hf_config_tensor(const model_config& c, std::string_view gguf_name);

}  // namespace vks::model
