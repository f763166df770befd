// Reading model_config from GGUF metadata and from Hugging Face config.json.
#include "model/config.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace vks::model {

bool is_known_arch(std::string_view a) { return a == "llama" || a == "qwen2" || a == "qwen3"; }

result<void> model_config::validate() const {
  auto bad = [&](const std::string& why) { return fail(errc::parse, "model config: " + why); };
  if (!is_known_arch(arch)) return fail(errc::unsupported, "unknown architecture '" + arch + "' (supported: llama, qwen2, qwen3)");
  if (n_layer <= 0 || n_layer > 4096) return bad("block count " + std::to_string(n_layer) + " out of range");
  if (n_embd <= 0 || n_embd > (1 << 20)) return bad("embedding length " + std::to_string(n_embd) + " out of range");
  if (n_head <= 0 || n_head > 4096) return bad("head count " + std::to_string(n_head) + " out of range");
  if (n_head_kv <= 0 || n_head_kv > n_head || n_head % n_head_kv != 0)
    return bad("kv head count " + std::to_string(n_head_kv) + " must divide head count " + std::to_string(n_head));
  if (head_dim <= 0 || head_dim > 1024 || head_dim % 2 != 0) return bad("head dim " + std::to_string(head_dim) + " invalid");
  if (n_ff <= 0 || n_ff > (1 << 22)) return bad("feed-forward length " + std::to_string(n_ff) + " out of range");
  if (n_vocab <= 0 || n_vocab > (1 << 24)) return bad("vocab size " + std::to_string(n_vocab) + " out of range");
  if (n_ctx <= 0) return bad("context length must be positive");
  if (!(rms_eps > 0.f) || rms_eps > 1.f) return bad("rms epsilon invalid");
  if (rope.n_dims <= 0 || rope.n_dims > head_dim || rope.n_dims % 2 != 0) return bad("rope dimension count invalid");
  if (!(rope.freq_base > 0.f)) return bad("rope base must be positive");
  return ok();
}

std::string model_config::summary() const {
  return arch + ": L=" + std::to_string(n_layer) + " C=" + std::to_string(n_embd) + " H=" + std::to_string(n_head) +
         "/" + std::to_string(n_head_kv) + " D=" + std::to_string(head_dim) + " F=" + std::to_string(n_ff) +
         " V=" + std::to_string(n_vocab) + " ctx=" + std::to_string(n_ctx) + (tied_embeddings ? " tied" : "");
}

result<model_config> config_from_gguf(const gguf::file& f) {
  model_config c;
  auto arch = f.get_string("general.architecture");
  if (!arch) return fail(errc::parse, f.path() + ": missing general.architecture");
  c.arch = *arch;
  if (!is_known_arch(c.arch))
    return fail(errc::unsupported, f.path() + ": unknown architecture '" + c.arch + "' (supported: llama, qwen2, qwen3)");
  const std::string p = c.arch + ".";
  auto need = [&](const char* key, int& out) -> bool {
    auto v = f.get_int(p + key);
    if (!v || *v <= 0 || *v > (1ll << 30)) return false;
    out = static_cast<int>(*v);
    return true;
  };
  for (auto [key, dst] : {std::pair{"block_count", &c.n_layer}, {"embedding_length", &c.n_embd},
                          {"attention.head_count", &c.n_head}, {"feed_forward_length", &c.n_ff}})
    if (!need(key, *dst)) return fail(errc::parse, f.path() + ": missing or invalid " + p + key);
  c.n_head_kv = c.n_head;
  need("attention.head_count_kv", c.n_head_kv);
  c.head_dim = c.n_embd / c.n_head;
  need("attention.key_length", c.head_dim);
  c.n_ctx = 4096;
  need("context_length", c.n_ctx);
  if (auto e = f.get_float(p + "attention.layer_norm_rms_epsilon")) c.rms_eps = static_cast<float>(*e);
  c.rope.mode = c.arch == "llama" ? gpu::rope_mode::normal : gpu::rope_mode::neox;
  c.rope.n_dims = c.head_dim;
  need("rope.dimension_count", c.rope.n_dims);
  c.rope.freq_base = c.arch == "llama" ? 10000.f : 1000000.f;
  if (auto b = f.get_float(p + "rope.freq_base")) c.rope.freq_base = static_cast<float>(*b);
  if (auto t = f.get_string(p + "rope.scaling.type"); t && *t == "linear")
    if (auto s = f.get_float(p + "rope.scaling.factor"); s && *s > 0) c.rope.freq_scale = static_cast<float>(1.0 / *s);
  // Vocab: explicit key, else the tokenizer's size, else token_embd's row count.
  if (auto v = f.get_int(p + "vocab_size")) c.n_vocab = static_cast<int>(*v);
  else if (auto a = f.get_array("tokenizer.ggml.tokens")) c.n_vocab = static_cast<int>(a->items.size());
  if (auto t = f.find_tensor("token_embd.weight"); t && t->dims.size() == 2) c.n_vocab = static_cast<int>(t->dims[1]);
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  c.qkv_bias = c.arch == "qwen2";
  c.qk_norm = c.arch == "qwen3";
  if (auto v = f.get_int(p + "pooling_type")) c.pooling_type = static_cast<int>(*v);
  if (auto b = f.get_int("tokenizer.ggml.bos_token_id")) c.bos_id = static_cast<int32_t>(*b);
  if (auto e = f.get_int("tokenizer.ggml.eos_token_id")) c.eos_id = static_cast<int32_t>(*e);
  if (auto r = c.validate(); !r) return fail(r.error().code, f.path() + ": " + r.error().message);
  return c;
}

namespace {

using json = nlohmann::json;

int get_int(const json& j, const char* key, int dflt) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return dflt;
  auto v = it->get<int64_t>();
  return v > 0 && v < (1ll << 30) ? static_cast<int>(v) : -1;
}
double get_num(const json& j, const char* key, double dflt) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : dflt;
}
int32_t first_id(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return -1;
  if (it->is_number_integer()) return it->get<int32_t>();
  if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) return (*it)[0].get<int32_t>();
  return -1;
}

result<std::string> arch_of(const json& j) {
  std::string name;
  if (auto a = j.find("architectures"); a != j.end() && a->is_array() && !a->empty() && (*a)[0].is_string())
    name = (*a)[0].get<std::string>();
  else if (auto m = j.find("model_type"); m != j.end() && m->is_string())
    name = m->get<std::string>();
  if (name == "LlamaForCausalLM" || name == "MistralForCausalLM" || name == "llama" || name == "mistral") return std::string("llama");
  if (name == "Qwen2ForCausalLM" || name == "qwen2") return std::string("qwen2");
  if (name == "Qwen3ForCausalLM" || name == "qwen3") return std::string("qwen3");
  return fail(errc::unsupported, "config.json: unknown architecture '" + name + "' (supported: Llama, Mistral, Qwen2, Qwen3)");
}

result<model_config> parse_hf(const json& j) {
  if (!j.is_object()) return fail(errc::parse, "config.json: not a JSON object");
  auto arch = arch_of(j);
  if (!arch) return fail(std::move(arch).error());
  model_config c;
  c.arch = *arch;
  c.n_layer = get_int(j, "num_hidden_layers", 0);
  c.n_embd = get_int(j, "hidden_size", 0);
  c.n_head = get_int(j, "num_attention_heads", 0);
  c.n_head_kv = get_int(j, "num_key_value_heads", c.n_head);
  c.n_ff = get_int(j, "intermediate_size", 0);
  c.n_vocab = get_int(j, "vocab_size", 0);
  c.n_ctx = get_int(j, "max_position_embeddings", 4096);
  c.head_dim = c.n_head > 0 ? get_int(j, "head_dim", c.n_embd / c.n_head) : 0;
  c.rms_eps = static_cast<float>(get_num(j, "rms_norm_eps", 1e-6));
  c.rope.mode = gpu::rope_mode::neox;  // HF stores Q/K un-permuted: rotate halves
  c.rope.n_dims = c.head_dim;
  c.rope.freq_base = static_cast<float>(get_num(j, "rope_theta", 10000.0));
  c.tied_embeddings = j.value("tie_word_embeddings", c.arch != "llama");
  c.qkv_bias = c.arch == "qwen2" || (c.arch == "llama" && j.value("attention_bias", false));
  c.qk_norm = c.arch == "qwen3";
  c.bos_id = first_id(j, "bos_token_id");
  c.eos_id = first_id(j, "eos_token_id");
  if (auto rs = j.find("rope_scaling"); rs != j.end() && rs->is_object()) {
    std::string type = rs->value("rope_type", rs->value("type", std::string()));
    if (type == "llama3") {
      auto& s = c.rope_llama3;
      s.enabled = true;
      s.factor = static_cast<float>(get_num(*rs, "factor", 8.0));
      s.low_freq_factor = static_cast<float>(get_num(*rs, "low_freq_factor", 1.0));
      s.high_freq_factor = static_cast<float>(get_num(*rs, "high_freq_factor", 4.0));
      s.original_context = get_int(*rs, "original_max_position_embeddings", 8192);
      if (!(s.factor > 0) || !(s.high_freq_factor > s.low_freq_factor) || s.original_context <= 0)
        return fail(errc::parse, "config.json: invalid llama3 rope_scaling");
    } else if (type == "linear") {
      double f = get_num(*rs, "factor", 1.0);
      if (f > 0) c.rope.freq_scale = static_cast<float>(1.0 / f);
    } else if (!type.empty() && type != "default") {
      return fail(errc::unsupported, "config.json: rope_scaling type '" + type + "' is not supported");
    }
  }
  if (auto r = c.validate(); !r) return fail(r.error().code, "config.json: " + r.error().message);
  return c;
}

}  // namespace

result<model_config> config_from_hf_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return fail(errc::parse, std::string("config.json: not valid JSON: ") + e.what());
  }
  try {
    return parse_hf(j);
  } catch (const json::exception& e) {  // a field of the wrong JSON type
    return fail(errc::parse, std::string("config.json: ") + e.what());
  }
}

std::vector<float> llama3_freq_factors(const model_config& c) {
  const auto& s = c.rope_llama3;
  const int n = c.rope.n_dims / 2;
  std::vector<float> out(static_cast<size_t>(n), 1.f);
  if (!s.enabled) return out;
  const double low_wavelen = s.original_context / s.low_freq_factor;
  const double high_wavelen = s.original_context / s.high_freq_factor;
  for (int i = 0; i < n; ++i) {
    double freq = 1.0 / std::pow(static_cast<double>(c.rope.freq_base), 2.0 * i / c.rope.n_dims);
    double wavelen = 2.0 * M_PI / freq;
    if (wavelen < high_wavelen) out[i] = 1.f;
    else if (wavelen > low_wavelen) out[i] = s.factor;
    else {
      double smooth = (s.original_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      out[i] = static_cast<float>(1.0 / ((1.0 - smooth) / s.factor + smooth));
    }
  }
  return out;
}

int pooling_from_sentence_transformers(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception&) {
    return -1;
  }
  if (!j.is_object()) return -1;
  auto on = [&](const char* key) { return j.contains(key) && j[key].is_boolean() && j[key].get<bool>(); };
  if (on("pooling_mode_lasttoken")) return 3;
  if (on("pooling_mode_cls_token")) return 2;
  if (on("pooling_mode_mean_tokens")) return 1;
  return -1;
}

}  // namespace vks::model
