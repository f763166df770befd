// Gemma 3 / Gemma 4 classes of the HF test-model writer (see hf_gemma_writer.hpp).
#include "testing/hf_gemma_writer.hpp"

#include <cmath>

namespace vks::model {
namespace {

using json = nlohmann::json;

std::vector<std::string> layer_types(const model_config& c) {
  std::vector<std::string> t;
  for (int l = 0; l < c.n_layer; ++l) t.push_back(c.is_swa_layer(l) ? "sliding_attention" : "full_attention");
  return t;
}

// Gemma4TextConfig's keys for sp (the generator's rope_freqs rotate a quarter of the global
// layers' pairs: partial_rotary_factor 0.25).
result<json> gemma4_text_config(const test_model_spec& sp) {
  const auto& c = sp.config;
  const int d_swa = c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim;
  if (c.rope_n_dims_swa != 0 && c.rope_n_dims_swa != d_swa)
    return fail(errc::unsupported, "HF Gemma 4 rotates whole sliding-layer heads (rope_n_dims_swa " +
                                       std::to_string(c.rope_n_dims_swa) + " of " + std::to_string(d_swa) + ")");
  // One KV head count per layer kind: num_key_value_heads on sliding layers, and on global
  // ones num_global_key_value_heads where it differs (transformers reads that under
  // attention_k_eq_v only).
  int kv_swa = c.n_head_kv;
  for (int l = 0; l < c.n_layer; ++l)
    if (c.is_swa_layer(l)) kv_swa = c.layer_n_head_kv(l);
  for (int l = 0; l < c.n_layer; ++l)
    if (c.layer_n_head_kv(l) != (c.is_swa_layer(l) ? kv_swa : c.n_head_kv))
      return fail(errc::unsupported, "HF Gemma 4 has one KV head count per layer kind");
  // Per-layer FFN widths: HF has only use_double_wide_mlp (the KV-shared layers' twice as wide).
  const bool double_wide = !c.n_ff_layer.empty();
  for (int l = 0; double_wide && l < c.n_layer; ++l)
    if (c.layer_n_ff(l) != c.n_ff * (l >= c.n_layer - c.n_kv_shared ? 2 : 1))
      return fail(errc::unsupported, "HF Gemma 4's per-layer MLP widths are use_double_wide_mlp's only");
  int owning_global = 0;
  for (int l = 0; l < c.n_layer; ++l) owning_global += !c.is_swa_layer(l) && c.kv_source_layer(l) == l;
  if (owning_global > 1)
    return fail(errc::unsupported, "HF Gemma 4's attention_k_eq_v cannot hold the generator's mix of global layers with and "
                                   "without their own V");
  return json{{"model_type", "gemma4_text"},
              {"hidden_size", c.n_embd},
              {"num_hidden_layers", c.n_layer},
              {"num_attention_heads", c.n_head},
              {"num_key_value_heads", kv_swa},
              {"num_global_key_value_heads", kv_swa != c.n_head_kv ? json(c.n_head_kv) : json(nullptr)},
              {"head_dim", d_swa},
              {"global_head_dim", c.head_dim},
              {"intermediate_size", c.n_ff},
              {"vocab_size", c.n_vocab},
              {"vocab_size_per_layer_input", c.n_vocab},
              {"hidden_size_per_layer_input", c.n_embd_per_layer},
              {"max_position_embeddings", c.n_ctx},
              {"rms_norm_eps", c.rms_eps},
              {"hidden_activation", "gelu_pytorch_tanh"},
              {"sliding_window", c.sliding_window},
              {"layer_types", layer_types(c)},
              {"rope_parameters",
               {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", c.rope_freq_base_swa}}},
                {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", c.rope.freq_base}}}}},
              {"final_logit_softcapping", c.final_softcap > 0 ? json(c.final_softcap) : json(nullptr)},
              {"num_kv_shared_layers", c.n_kv_shared},
              {"attention_k_eq_v", kv_swa != c.n_head_kv},
              {"attention_bias", false},
              {"enable_moe_block", c.n_expert > 0},
              {"num_experts", c.n_expert > 0 ? json(c.n_expert) : json(nullptr)},
              {"top_k_experts", c.n_expert > 0 ? json(c.n_expert_used) : json(nullptr)},
              {"moe_intermediate_size", c.n_expert > 0 ? json(c.n_ff_exp) : json(nullptr)},
              {"use_double_wide_mlp", double_wide},
              {"tie_word_embeddings", c.tied_embeddings},
              {"bos_token_id", c.bos_id},
              {"eos_token_id", c.eos_id}};
}

// Gemma3TextConfig's defaults: the published multimodal configs leave these keys out.
bool is_gemma3_default(const std::string& k, const json& v) {
  static const json d = {{"head_dim", 256}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1e6}, {"query_pre_attn_scalar", 256},
                         {"rope_local_base_freq", 10000.0}, {"sliding_window_pattern", 6},
                         {"hidden_activation", "gelu_pytorch_tanh"}, {"final_logit_softcapping", nullptr},
                         {"attn_logit_softcapping", nullptr}, {"rope_scaling", nullptr}, {"tie_word_embeddings", true},
                         {"max_position_embeddings", 131072}, {"num_attention_heads", 8}, {"num_key_value_heads", 4}};
  auto it = d.find(k);
  if (it == d.end()) return false;
  if (it->is_number() && v.is_number())  // f32 values written as doubles
    return std::abs(it->get<double>() - v.get<double>()) <= 1e-6 * std::abs(it->get<double>());
  return *it == v;
}

}  // namespace

result<json> hf_gemma_config(const test_model_spec& sp, json text) {
  const auto& c = sp.config;
  if (c.arch == "gemma4") {
    auto t = gemma4_text_config(sp);
    if (!t) return fail(std::move(t).error());
    if (sp.hf_class == "Gemma4ForCausalLM") {
      (*t)["architectures"] = {"Gemma4ForCausalLM"};
      return *t;
    }
    if (!sp.hf_class.empty() && sp.hf_class != "Gemma4ForConditionalGeneration")
      return fail(errc::unsupported, "no HF class '" + sp.hf_class + "' is written for gemma4");
    return json{{"architectures", {"Gemma4ForConditionalGeneration"}}, {"model_type", "gemma4"},
                {"tie_word_embeddings", c.tied_embeddings}, {"text_config", std::move(*t)},
                {"vision_config", {{"model_type", "gemma4_vision"}}}, {"audio_config", nullptr},
                {"torch_dtype", text.value("torch_dtype", "float32")}};
  }
  if (c.arch != "gemma3" || sp.hf_class.empty() || sp.hf_class == "Gemma3ForCausalLM") return text;
  if (sp.hf_class != "Gemma3ForConditionalGeneration")
    return fail(errc::unsupported, "no HF class '" + sp.hf_class + "' is written for gemma3");
  json sparse = {{"model_type", "gemma3_text"}};
  for (const auto& [k, v] : text.items()) {
    if (k == "architectures" || k == "model_type" || k == "torch_dtype" || k == "bos_token_id" || k == "eos_token_id" ||
        k == "hidden_act" || is_gemma3_default(k, v))
      continue;
    sparse[k] = v;
  }
  return json{{"architectures", {"Gemma3ForConditionalGeneration"}}, {"model_type", "gemma3"},
              {"text_config", std::move(sparse)}, {"vision_config", {{"model_type", "siglip_vision_model"}}},
              {"bos_token_id", c.bos_id}, {"eos_token_id", {c.eos_id, 106}}, {"mm_tokens_per_image", 256},
              {"torch_dtype", text.value("torch_dtype", "float32")}};
}

std::string hf_gemma_tensor_name(const test_model_spec& sp, const std::string& hf) {
  if (sp.config.arch == "gemma3" && sp.hf_class == "Gemma3ForConditionalGeneration") return "language_model." + hf;
  if (sp.config.arch == "gemma4" && sp.hf_class != "Gemma4ForCausalLM" && hf.starts_with("model."))
    return "model.language_model." + hf.substr(6);
  return hf;
}

}  // namespace vks::model
