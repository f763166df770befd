// Gemma 3 / Gemma 4 in Hugging Face layout: config.json's text part with transformers'
// defaults, Gemma 4's keys, tensor names and the rope_freqs tensor (see hf_gemma.hpp).
#include "model/hf_gemma.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace vks::model {
namespace {

using json = nlohmann::json;

// transformers' Gemma3TextConfig defaults (the keys config_from_hf_json reads).
const json& gemma3_defaults() {
  static const json d = {
      {"vocab_size", 262208},          {"hidden_size", 2304},           {"intermediate_size", 9216},
      {"num_hidden_layers", 26},       {"num_attention_heads", 8},      {"num_key_value_heads", 4},
      {"head_dim", 256},               {"hidden_activation", "gelu_pytorch_tanh"},
      {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6},    {"eos_token_id", 1},
      {"bos_token_id", 2},             {"tie_word_embeddings", true},   {"rope_theta", 1e6},
      {"attention_bias", false},       {"query_pre_attn_scalar", 256},  {"sliding_window", 4096},
      {"final_logit_softcapping", nullptr}, {"attn_logit_softcapping", nullptr}, {"rope_scaling", nullptr},
      {"rope_local_base_freq", 10000.0}, {"sliding_window_pattern", 6}};
  return d;
}

// transformers' Gemma4TextConfig defaults (layer_types and rope_parameters are derived below).
const json& gemma4_defaults() {
  static const json d = {
      {"vocab_size", 262144},          {"hidden_size", 2304},           {"intermediate_size", 9216},
      {"num_hidden_layers", 30},       {"num_attention_heads", 8},      {"num_key_value_heads", 4},
      {"head_dim", 256},               {"global_head_dim", 512},        {"num_global_key_value_heads", nullptr},
      {"hidden_activation", "gelu_pytorch_tanh"}, {"max_position_embeddings", 131072},
      {"rms_norm_eps", 1e-6},          {"eos_token_id", 1},             {"bos_token_id", 2},
      {"tie_word_embeddings", true},   {"attention_bias", false},       {"sliding_window", 512},
      {"final_logit_softcapping", nullptr}, {"use_bidirectional_attention", nullptr},
      {"vocab_size_per_layer_input", 262144}, {"hidden_size_per_layer_input", 256},
      {"attention_k_eq_v", false},     {"num_kv_shared_layers", 0},     {"enable_moe_block", false},
      {"use_double_wide_mlp", false}};
  return d;
}

result<void> bad(errc code, const std::string& why) { return fail(code, "config.json: " + why); }

// out = a non-negative integer key below 2^30; null or absent: dflt.
result<void> count(const json& j, const char* key, int dflt, int& out) {
  auto it = j.find(key);
  out = dflt;
  if (it == j.end() || it->is_null()) return ok();
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() >= (int64_t{1} << 30))
    return fail(errc::parse, std::string("config.json: ") + key + " must be a non-negative integer");
  out = static_cast<int>(it->get<int64_t>());
  return ok();
}

double number(const json& j, const char* key, double dflt) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : dflt;
}

std::string rope_type(const json& p) {
  auto it = p.find("rope_type");
  if (it == p.end()) it = p.find("type");
  return it != p.end() && it->is_string() ? it->get<std::string>() : "default";
}

// Gemma 3 in transformers 5: rope_parameters per layer type -> transformers 4's keys.
result<void> gemma3_rope_by_layer_type(json& out) {
  auto rp = out.find("rope_parameters");
  if (rp == out.end() || !rp->is_object() || (!rp->contains("full_attention") && !rp->contains("sliding_attention")))
    return ok();
  const json full = rp->value("full_attention", json::object()), slide = rp->value("sliding_attention", json::object());
  if (!full.is_object() || !slide.is_object()) return bad(errc::parse, "rope_parameters per layer type must be objects");
  if (rope_type(slide) != "default")
    return bad(errc::unsupported, "Gemma 3 sliding layers with rope type '" + rope_type(slide) + "' are not supported (default)");
  out["rope_theta"] = number(full, "rope_theta", number(out, "rope_theta", 1e6));
  out["rope_local_base_freq"] = number(slide, "rope_theta", number(out, "rope_local_base_freq", 10000.0));
  out["rope_scaling"] = rope_type(full) == "default" ? json(nullptr) : full;
  out.erase("rope_parameters");
  return ok();
}

// Gemma 4: layer_types (default: five sliding layers then a global one, the last layer global
// whatever it says, as transformers forces) and rope_parameters per layer type.
result<void> gemma4_layers_and_rope(json& out) {
  const int L = out["num_hidden_layers"].is_number_integer() ? out["num_hidden_layers"].get<int>() : 0;
  if (L <= 0 || L > 4096) return bad(errc::parse, "num_hidden_layers out of range");
  auto lt = out.find("layer_types");
  if (lt == out.end() || lt->is_null()) {
    json types = json::array();
    for (int l = 0; l < L; ++l) types.push_back((l + 1) % 6 != 0 ? "sliding_attention" : "full_attention");
    out["layer_types"] = std::move(types);
  } else if (!lt->is_array() || static_cast<int>(lt->size()) != L) {
    return bad(errc::parse, "layer_types is not one entry a layer");
  }
  out["layer_types"][static_cast<size_t>(L - 1)] = "full_attention";
  auto rp = out.find("rope_parameters");
  if (rp == out.end() || rp->is_null())
    out["rope_parameters"] = {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
                              {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25},
                                                  {"rope_theta", 1e6}}}};
  else if (!rp->is_object())
    return bad(errc::parse, "rope_parameters must be an object");
  return ok();
}

}  // namespace

result<json> hf_gemma_text_config(std::string_view arch, const json& j) {
  if (arch != "gemma3" && arch != "gemma4") return j;
  if (!j.is_object()) return fail(errc::parse, "config.json: the text config is not an object");
  json out = j;
  for (const auto& [k, v] : (arch == "gemma3" ? gemma3_defaults() : gemma4_defaults()).items())
    if (!out.contains(k)) out[k] = v;
  if (out.value("attention_bias", false) == true)
    return fail(errc::unsupported, "config.json: Gemma with attention biases is not supported");
  if (arch == "gemma3") VKS_TRY(gemma3_rope_by_layer_type(out));
  else VKS_TRY(gemma4_layers_and_rope(out));
  return out;
}

namespace {

// The sliding and global layers' head shapes (Gemma 4's attention: head_dim on sliding layers,
// global_head_dim on global ones and, where attention_k_eq_v, num_global_key_value_heads),
// as llama.cpp's converter writes them: key_length (head_dim) the global layers', key_length_swa
// (head_dim_swa) the sliding ones', a KV head count per layer where the two kinds differ.
result<void> gemma4_heads(const json& j, model_config& c) {
  int d_swa = 0, d_full = 0, kv_swa = 0, kv_full = 0;
  VKS_TRY(count(j, "head_dim", 0, d_swa));
  VKS_TRY(count(j, "global_head_dim", 0, d_full));
  if (d_full == 0) d_full = d_swa;  // transformers: a falsy global_head_dim means head_dim
  VKS_TRY(count(j, "num_key_value_heads", c.n_head, kv_swa));
  kv_full = kv_swa;
  if (j.value("attention_k_eq_v", false) == true) VKS_TRY(count(j, "num_global_key_value_heads", kv_swa, kv_full));
  if (kv_full == 0) kv_full = kv_swa;
  if (d_swa > 512 || d_full > 512)  // the attention kernels' limit, as the GGUF reader's
    return bad(errc::unsupported, "gemma4 with heads wider than 512 (head_dim " + std::to_string(d_swa) + ", global_head_dim " +
                                      std::to_string(d_full) + ") is not supported");
  for (int kv : {kv_swa, kv_full})
    if (kv <= 0 || kv > c.n_head || c.n_head % kv != 0) return bad(errc::parse, "gemma4 KV head counts must divide the head count");
  c.head_dim = d_full;
  c.head_dim_swa = d_swa == d_full ? 0 : d_swa;
  c.n_head_kv = kv_full;
  c.n_head_kv_layer.clear();
  if (kv_swa != kv_full)
    for (int l = 0; l < c.n_layer; ++l) c.n_head_kv_layer.push_back(c.is_swa_layer(l) ? kv_swa : kv_full);
  return ok();
}

// rope_parameters per layer type: sliding layers rotate the whole head (transformers' default
// rope ignores a partial factor there); global layers' proportional rope rotates the first
// floor(partial_rotary_factor * D / 2) pairs at the frequencies of a whole-head rope, the other
// pairs not at all: llama.cpp's converter writes that as rope_freqs of 1 then 1e30.
result<void> gemma4_rope(const json& j, model_config& c) {
  if (auto p = j.find("partial_rotary_factor"); p != j.end() && p->is_number() && p->get<double>() != 1.0)
    return bad(errc::unsupported, "gemma4 with a top-level partial_rotary_factor is ambiguous (llama.cpp applies it to the sliding "
                                  "layers, transformers does not) and is not supported");
  const json& rp = j.at("rope_parameters");
  for (const char* t : {"sliding_attention", "full_attention"})  // transformers looks up each layer type's
    if (std::find(c.swa_layers.begin(), c.swa_layers.end(), t[0] == 's' ? 1 : 0) != c.swa_layers.end() && !rp.contains(t))
      return bad(errc::parse, std::string("gemma4 rope_parameters has no ") + t + " entry");
  const json slide = rp.value("sliding_attention", json::object()), full = rp.value("full_attention", json::object());
  if (!slide.is_object() || !full.is_object()) return bad(errc::parse, "rope_parameters per layer type must be objects");
  const std::string ts = rope_type(slide), tf = rope_type(full);
  if (ts != "default")
    return bad(errc::unsupported, "gemma4 sliding layers with rope type '" + ts + "' are not supported (default)");
  if (tf != "default" && tf != "proportional")
    return bad(errc::unsupported, "gemma4 global layers with rope type '" + tf + "' are not supported (proportional, default)");
  c.rope_freq_base_swa = static_cast<float>(number(slide, "rope_theta", 10000.0));
  c.rope.freq_base = static_cast<float>(number(full, "rope_theta", 1e6));
  if (!(c.rope_freq_base_swa > 0) || !(c.rope.freq_base > 0)) return bad(errc::parse, "rope_theta must be positive");
  c.rope_n_dims_swa = c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim;  // the whole sliding head
  c.rope.n_dims = c.head_dim;
  c.rope_freq_factors.clear();
  if (tf == "default") return ok();
  const double prf = number(full, "partial_rotary_factor", 1.0);
  if (!(prf > 0 && prf <= 1)) return bad(errc::parse, "invalid partial_rotary_factor of the global layers");
  const int pairs = c.head_dim / 2, rotated = static_cast<int>(std::floor(prf * c.head_dim / 2));
  if (rotated < pairs) {
    c.rope_freq_factors.assign(static_cast<size_t>(pairs), 1e30f);
    std::fill_n(c.rope_freq_factors.begin(), rotated, 1.f);
  }
  const double factor = number(full, "factor", 1.0);
  if (factor != 1.0) {  // transformers divides the frequencies by it: llama.cpp's linear scaling
    c.rope_scaling.type = "linear";
    c.rope_scaling.factor = static_cast<float>(factor);
    if (auto r = apply_rope_scaling(c); !r) return fail(r.error().code, "config.json: " + r.error().message);
  }
  return ok();
}

// num_kv_shared_layers: transformers' shared layer reads the KV of the last earlier layer of its
// type, which is llama.cpp's rule (first shared - 2 sliding, - 1 global) only when those two
// layers are a sliding then a global one. use_double_wide_mlp: the shared layers' MLP is
// 2 * intermediate_size wide (transformers' Gemma4DecoderLayer; llama.cpp's converter writes
// it as a per-layer feed_forward_length), n_ff_layer here.
result<void> gemma4_kv_sharing(const json& j, model_config& c) {
  VKS_TRY(count(j, "num_kv_shared_layers", 0, c.n_kv_shared));
  if (c.n_kv_shared == 0) return ok();
  const int first = c.n_layer - c.n_kv_shared;
  if (c.n_kv_shared >= c.n_layer || first < 2 || !c.is_swa_layer(first - 2) || c.is_swa_layer(first - 1))
    return bad(errc::unsupported, "gemma4 num_kv_shared_layers needs a sliding then a global layer just before the shared ones");
  if (j.value("use_double_wide_mlp", false) == true) {  // E2B: the KV-shared layers' MLP is twice as wide
    if (c.n_ff <= 0 || c.n_ff > (1 << 21)) return bad(errc::parse, "gemma4 intermediate_size out of range");
    c.n_ff_layer.assign(static_cast<size_t>(c.n_layer), c.n_ff);
    for (int l = first; l < c.n_layer; ++l) c.n_ff_layer[static_cast<size_t>(l)] = 2 * c.n_ff;
  }
  return ok();
}

// enable_moe_block (26B-A4B): every layer routes num_experts experts of moe_intermediate_size
// beside its dense MLP, top_k_experts a token; the router's softmax, top k renormalised to sum
// 1 (transformers' Gemma4TextRouter), then per_expert_scale (the ffn_down_exps.scale tensor).
result<void> gemma4_moe(const json& j, model_config& c) {
  auto on = j.find("enable_moe_block");
  if (on == j.end() || on->is_null() || *on == false) return ok();
  if (!on->is_boolean()) return bad(errc::parse, "enable_moe_block must be a boolean");
  VKS_TRY(count(j, "num_experts", 0, c.n_expert));
  VKS_TRY(count(j, "top_k_experts", 0, c.n_expert_used));
  VKS_TRY(count(j, "moe_intermediate_size", 0, c.n_ff_exp));
  if (c.n_expert <= 0 || c.n_expert_used <= 0 || c.n_ff_exp <= 0)
    return bad(errc::parse, "gemma4 with enable_moe_block needs num_experts, top_k_experts and moe_intermediate_size");
  if (c.n_expert_used > c.n_expert) return bad(errc::parse, "gemma4 top_k_experts exceeds num_experts");
  c.expert_gating = gpu::moe_gating::softmax;
  c.expert_norm = true;
  return ok();
}

}  // namespace

result<void> gemma4_from_hf(const json& j, model_config& c) {
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.post_norms = c.gelu_ffn = c.qk_norm = c.v_norm = true;
  c.attn_scale = 1.f;
  if (auto a = j.value("hidden_activation", j.value("hidden_act", std::string("gelu_pytorch_tanh")));
      a != "gelu_pytorch_tanh" && a != "gelu_tanh")
    return bad(errc::unsupported, "Gemma activation '" + a + "' is not supported (gelu_pytorch_tanh)");
  VKS_TRY(gemma4_moe(j, c));
  if (auto b = j.find("use_bidirectional_attention"); b != j.end() && *b == "all")
    return bad(errc::unsupported, "gemma4 with bidirectional attention on every token is not supported");
  VKS_TRY(count(j, "sliding_window", 0, c.sliding_window));
  if (c.sliding_window <= 0) return bad(errc::parse, "gemma4 needs a positive sliding_window");
  c.swa_layers.clear();
  for (const auto& t : j.at("layer_types")) {
    if (t != "sliding_attention" && t != "full_attention") return bad(errc::unsupported, "gemma4 layer type " + t.dump() + " is not supported");
    c.swa_layers.push_back(t == "sliding_attention" ? 1 : 0);
  }
  VKS_TRY(gemma4_heads(j, c));
  VKS_TRY(gemma4_rope(j, c));
  auto cap = j.find("final_logit_softcapping");
  c.final_softcap = cap != j.end() && cap->is_number() ? cap->get<float>() : 0.f;
  if (c.final_softcap < 0) return bad(errc::parse, "final_logit_softcapping must not be negative");
  VKS_TRY(count(j, "hidden_size_per_layer_input", 0, c.n_embd_per_layer));
  int ple_vocab = 0;
  VKS_TRY(count(j, "vocab_size_per_layer_input", c.n_vocab, ple_vocab));
  if (c.n_embd_per_layer > 0 && ple_vocab != c.n_vocab)
    return bad(errc::unsupported, "gemma4 with a per-layer embedding vocabulary other than vocab_size is not supported");
  return gemma4_kv_sharing(j, c);
}

std::string hf_gemma4_name(std::string_view g) {
  static const std::pair<std::string_view, std::string_view> k_model[] = {
      {"per_layer_token_embd.weight", "model.embed_tokens_per_layer.weight"},
      {"per_layer_model_proj.weight", "model.per_layer_model_projection.weight"},
      {"per_layer_proj_norm.weight", "model.per_layer_projection_norm.weight"}};
  for (auto& [from, to] : k_model)
    if (g == from) return std::string(to);
  if (!g.starts_with("blk.")) return {};
  const auto dot = g.find('.', 4);
  if (dot == std::string_view::npos) return {};
  const std::string layer(g.substr(4, dot - 4));
  const std::string_view rest = g.substr(dot + 1);
  static const std::pair<std::string_view, std::string_view> k_layer[] = {
      {"inp_gate.weight", "per_layer_input_gate.weight"},
      {"proj.weight", "per_layer_projection.weight"},
      {"post_norm.weight", "post_per_layer_input_norm.weight"},
      {"layer_output_scale.weight", "layer_scalar"},
      // enable_moe_block: the router, the stacked experts (gate_up_proj [E, 2Fe, C] and
      // down_proj [E, C, Fe] are GGUF's {C, 2Fe, E} and {Fe, C, E} as stored) and the norms
      {"ffn_gate_inp.weight", "router.proj.weight"},
      {"ffn_gate_inp.scale", "router.scale"},
      {"ffn_down_exps.scale", "router.per_expert_scale"},
      {"ffn_gate_up_exps.weight", "experts.gate_up_proj"},
      {"ffn_down_exps.weight", "experts.down_proj"},
      {"pre_ffw_norm_2.weight", "pre_feedforward_layernorm_2.weight"},
      {"post_ffw_norm_1.weight", "post_feedforward_layernorm_1.weight"},
      {"post_ffw_norm_2.weight", "post_feedforward_layernorm_2.weight"}};
  for (auto& [from, to] : k_layer)
    if (rest == from) return "model.layers." + layer + "." + std::string(to);
  return {};
}

std::optional<weight_ref> hf_config_tensor(const model_config& c, std::string_view g) {
  if (g != "rope_freqs.weight" || c.rope_freq_factors.empty()) return std::nullopt;
  auto bytes = std::make_shared<std::vector<std::byte>>(c.rope_freq_factors.size() * sizeof(float));
  std::memcpy(bytes->data(), c.rope_freq_factors.data(), bytes->size());
  weight_ref w;
  w.name = std::string(g);
  w.type = gpu::dtype::f32;
  w.ne = {static_cast<int64_t>(c.rope_freq_factors.size()), 1, 1, 1};
  w.n_dims = 1;
  w.data = std::span<const std::byte>(bytes->data(), bytes->size());
  w.owner = std::move(bytes);
  return w;
}

}  // namespace vks::model
