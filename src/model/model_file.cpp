// Opening model files: format detection, HF directory layout (single or sharded
// safetensors), GGUF <-> HF tensor name mapping, and the default model path.
#include "model/model_file.hpp"

#include <filesystem>
#include <set>
#include <system_error>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/mapped_file.hpp"
#include "model/hf_gemma.hpp"
#include "model/hf_hybrid.hpp"

namespace vks::model {
namespace fs = std::filesystem;

std::string hf_tensor_name(std::string_view g, const model_config* c) {
  if (c && c->arch == "gemma4")  // per-layer embeddings, layer_output_scale (hf_gemma.hpp)
    if (auto h = hf_gemma4_name(g); !h.empty()) return h;
  if (g == "token_embd.weight") return "model.embed_tokens.weight";
  if (g == "output_norm.weight") return "model.norm.weight";
  if (g == "output.weight") return "lm_head.weight";
  if (g.substr(0, 4) != "blk.") return {};
  auto dot = g.find('.', 4);
  if (dot == std::string_view::npos) return {};
  std::string layer(g.substr(4, dot - 4));
  std::string_view rest = g.substr(dot + 1);
  static const std::pair<std::string_view, std::string_view> k_map[] = {
      {"attn_q.weight", "self_attn.q_proj.weight"},   {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},   {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},       {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},       {"attn_output.bias", "self_attn.o_proj.bias"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"attn_norm.weight", "input_layernorm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},        {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  // Phi-3's fused projections: qkv_proj, and gate_up_proj (GGUF's ffn_up of 2F rows).
  if (rest == "attn_qkv.weight") return "model.layers." + layer + ".self_attn.qkv_proj.weight";
  if (c && c->fused_gate_up && rest == "ffn_up.weight") return "model.layers." + layer + ".mlp.gate_up_proj.weight";
  if (c && c->arch == "gpt-oss") {  // GptOssForCausalLM's own names
    static const std::pair<std::string_view, std::string_view> k_oss[] = {
        {"ffn_gate_inp.weight", "mlp.router.weight"},     {"ffn_gate_inp.bias", "mlp.router.bias"},
        {"attn_sinks.weight", "self_attn.sinks"},         {"post_attention_norm.weight", "post_attention_layernorm.weight"},
        {"ffn_down_exps.bias", "mlp.experts.down_proj_bias"}};
    for (auto& [from, to] : k_oss)
      if (rest == from) return "model.layers." + layer + "." + std::string(to);
  }
  if (c) {  // Qwen3.5 / Qwen3-Next: linear_attn.*, the shared expert, post_attention_layernorm
    if (auto h = hf_hybrid_layer_name(rest, *c); !h.empty()) return "model.layers." + layer + "." + h;
  }
  if (rest == "ffn_gate_inp.weight") return "model.layers." + layer + ".mlp.gate.weight";  // the MoE router
  if (c && c->post_norms) {  // Gemma 2/3
    static const std::pair<std::string_view, std::string_view> k_gemma[] = {
        {"post_attention_norm.weight", "post_attention_layernorm.weight"},
        {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
        {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"}};
    for (auto& [from, to] : k_gemma)
      if (rest == from) return "model.layers." + layer + "." + std::string(to);
  }
  for (auto& [from, to] : k_map)
    if (rest == from) return "model.layers." + layer + "." + std::string(to);
  return {};
}

result<model_file> model_file::open(const std::string& path) {
  model_file m;
  m.path_ = path;
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return fail(errc::not_found, path + ": no such file or directory");
  std::string gguf_path = path;
  if (fs::is_directory(st)) {
    if (fs::exists(fs::path(path) / "config.json")) {
      auto r = m.open_hf_dir(path);
      if (!r) return fail(std::move(r).error());
      return m;
    }
    std::vector<std::string> ggufs;
    for (auto& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ".gguf") ggufs.push_back(e.path().string());
    if (ggufs.size() != 1)
      return fail(errc::not_found, path + ": directory has no config.json and " + std::to_string(ggufs.size()) +
                                       " .gguf files (need a HF model directory or exactly one .gguf)");
    gguf_path = ggufs[0];
  }
  auto f = gguf::file::open(gguf_path);
  if (!f) return fail(std::move(f).error());
  m.path_ = gguf_path;
  m.gguf_ = std::make_shared<gguf::file>(std::move(*f));
  m.has_weights_ = !m.gguf_->tensors().empty();
  if (m.has_weights_) {
    auto c = config_from_gguf(*m.gguf_);
    if (!c) return fail(std::move(c).error());
    m.config_ = *c;
  }
  return m;
}

// A sentence-transformers checkpoint names its Pooling module's folder in modules.json
// (usually 1_Pooling); -1 when there is none.
static int sentence_transformers_pooling(const std::string& dir) {
  std::string folder = "1_Pooling";
  if (auto m = read_file((fs::path(dir) / "modules.json").string())) {
    try {
      for (const auto& mod : nlohmann::json::parse(*m)) {
        const auto type = mod.value("type", std::string());
        const auto path = mod.value("path", std::string());
        if (type.ends_with("Pooling") && !path.empty() && path.find("..") == std::string::npos) folder = path;
      }
    } catch (const nlohmann::json::exception&) {
    }
  }
  const auto cfg = fs::path(dir) / folder / "config.json";
  if (!fs::exists(cfg)) return -1;
  auto text = read_file(cfg.string());
  return text ? pooling_from_sentence_transformers(*text) : -1;
}

result<void> model_file::open_hf_dir(const std::string& dir) {
  format_ = model_format::safetensors;
  auto text = read_file((fs::path(dir) / "config.json").string());
  if (!text) return fail(std::move(text).error());
  auto c = config_from_hf_json(*text);
  if (!c) return fail(c.error().code, dir + "/" + c.error().message);
  config_ = *c;
  config_.pooling_type = sentence_transformers_pooling(dir);
  std::vector<std::string> files;
  auto index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    auto itext = read_file(index.string());
    if (!itext) return fail(std::move(itext).error());
    std::set<std::string> uniq;
    try {
      auto j = nlohmann::json::parse(*itext);
      for (auto& [name, file] : j.at("weight_map").items()) {
        auto f = file.get<std::string>();
        if (f.empty() || f.find('/') != std::string::npos || f == "..")
          return fail(errc::parse, index.string() + ": bad shard name '" + f + "'");
        if (uniq.insert(f).second) files.push_back(f);
      }
    } catch (const nlohmann::json::exception& e) {
      return fail(errc::parse, index.string() + ": " + e.what());
    }
  } else {
    files.push_back("model.safetensors");
  }
  for (auto& f : files) {
    auto s = safetensors_file::open((fs::path(dir) / f).string());
    if (!s) return fail(std::move(s).error());
    shards_.push_back(std::move(*s));
  }
  if (!find_hf("lm_head.weight")) config_.tied_embeddings = true;
  has_weights_ = true;
  return ok();
}

const st_tensor* model_file::find_st(std::string_view hf_name) const {
  for (auto& s : shards_)
    if (auto t = s.find(hf_name)) return t;
  return nullptr;
}

const st_tensor* model_file::find_hf(const std::string& hf_name) const {
  if (auto t = find_st(hf_name)) return t;
  if (auto t = find_st("language_model." + hf_name)) return t;
  if (hf_name.starts_with("model.")) return find_st("model.language_model." + hf_name.substr(6));
  return nullptr;
}

namespace {

// blk.L.ffn_{gate,up,down}_exps.weight -> ("L", "gate_proj" | "up_proj" | "down_proj"), else
// empty: HF keeps each expert's projection as its own tensor (Gemma 4's stacks are plain
// tensors named by hf_gemma4_name).
std::pair<std::string, std::string> hf_expert_name(std::string_view g, const model_config& c) {
  if (!g.starts_with("blk.") || c.arch == "gemma4") return {};
  const auto dot = g.find('.', 4);
  if (dot == std::string_view::npos) return {};
  const std::string_view rest = g.substr(dot + 1);
  for (auto [from, to] : {std::pair{"ffn_gate_exps.weight", "gate_proj"}, {"ffn_up_exps.weight", "up_proj"},
                          {"ffn_down_exps.weight", "down_proj"}})
    if (rest == from) return {std::string(g.substr(4, dot - 4)), to};
  return {};
}

std::string fused_expert_name(const std::string& layer, const std::string& proj) {
  return "model.layers." + layer + ".mlp.experts." + (proj == "down_proj" ? "down_proj" : "gate_up_proj");
}

}  // namespace

// The experts of a qwen3moe layer stacked into GGUF's {k, n, E} (E = config.n_expert):
// every expert's tensor must be present with one dtype and shape {n, k}.
result<weight_ref> model_file::hf_experts(std::string_view g, const std::string& layer, const std::string& proj) const {
  weight_ref w;
  w.name = std::string(g);
  const int E = config_.n_expert;
  if (E <= 0) return fail(errc::parse, path_ + ": tensor '" + w.name + "' in a model without experts");
  if (!find_hf("model.layers." + layer + ".mlp.experts.0." + proj + ".weight")) return hf_fused_experts(g, layer, proj);
  auto bytes = std::make_shared<std::vector<std::byte>>();
  for (int e = 0; e < E; ++e) {
    const std::string hf = "model.layers." + layer + ".mlp.experts." + std::to_string(e) + "." + proj + ".weight";
    const st_tensor* t = find_hf(hf);
    if (!t) return fail(errc::parse, path_ + ": missing tensor '" + hf + "'");
    if (!t->type) return fail(errc::unsupported, path_ + ": tensor '" + hf + "' has dtype " + t->dtype + " (supported: F32, F16, BF16)");
    if (t->shape.size() != 2) return fail(errc::parse, path_ + ": tensor '" + hf + "' is not a matrix");
    const std::array<int64_t, 4> ne{static_cast<int64_t>(t->shape[1]), static_cast<int64_t>(t->shape[0]), E, 1};
    if (e == 0) {
      w.type = *t->type;
      w.ne = ne;
      w.n_dims = 3;
      bytes->reserve(t->data.size() * static_cast<size_t>(E));
    } else if (*t->type != w.type || ne != w.ne) {
      return fail(errc::parse, path_ + ": tensor '" + hf + "' differs in dtype or shape from expert 0's");
    }
    bytes->insert(bytes->end(), t->data.begin(), t->data.end());
  }
  w.data = std::span<const std::byte>(bytes->data(), bytes->size());
  w.owner = std::move(bytes);
  return w;
}

// transformers 5's fused expert stacks (Qwen3.5 MoE checkpoints): mlp.experts.gate_up_proj
// [E, 2 Fe, C] (per expert its Fe gate rows, then its Fe up rows) and mlp.experts.down_proj
// [E, C, Fe], with or without a .weight suffix.
result<weight_ref> model_file::hf_fused_experts(std::string_view g, const std::string& layer, const std::string& proj) const {
  const bool down = proj == "down_proj";
  const std::string base = fused_expert_name(layer, proj);
  const st_tensor* t = find_hf(base);
  if (!t) t = find_hf(base + ".weight");
  if (!t) return fail(errc::parse, path_ + ": missing tensor '" + base + "' (or per-expert '...experts.0." + proj + ".weight')");
  if (!t->type) return fail(errc::unsupported, path_ + ": tensor '" + base + "' has dtype " + t->dtype + " (supported: F32, F16, BF16)");
  const int64_t E = config_.n_expert;
  if (t->shape.size() != 3 || static_cast<int64_t>(t->shape[0]) != E || (!down && t->shape[1] % 2 != 0))
    return fail(errc::parse, path_ + ": tensor '" + base + "' is not a stack of " + std::to_string(E) + " experts");
  weight_ref w;
  w.name = std::string(g);
  w.type = *t->type;
  w.n_dims = 3;
  const int64_t k = static_cast<int64_t>(t->shape[2]), n = static_cast<int64_t>(t->shape[1]) / (down ? 1 : 2);
  w.ne = {k, n, E, 1};
  if (down) {
    w.data = t->data;
    return w;
  }
  const size_t half = static_cast<size_t>(n * k) * (gpu::traits(w.type).block_bytes / gpu::traits(w.type).block_elems);
  if (t->data.size() != 2 * half * static_cast<size_t>(E)) return fail(errc::parse, path_ + ": tensor '" + base + "' has a bad byte size");
  auto bytes = std::make_shared<std::vector<std::byte>>();
  bytes->reserve(half * static_cast<size_t>(E));
  const size_t off = proj == "up_proj" ? half : 0;
  for (int64_t e = 0; e < E; ++e) {
    const auto at = t->data.begin() + static_cast<std::ptrdiff_t>(2 * half * static_cast<size_t>(e) + off);
    bytes->insert(bytes->end(), at, at + static_cast<std::ptrdiff_t>(half));
  }
  w.data = std::span<const std::byte>(bytes->data(), bytes->size());
  w.owner = std::move(bytes);
  return w;
}

bool model_file::has_tensor(std::string_view g) const {
  if (gguf_) return gguf_->find_tensor(g) != nullptr;
  if (config_.arch == "gpt-oss" && is_gpt_oss_fused(g)) return has_gpt_oss_fused(g);
  if (hf_config_tensor(config_, g)) return true;
  if (auto [layer, proj] = hf_expert_name(g, config_); !layer.empty())
    return config_.n_expert > 0 && (find_hf("model.layers." + layer + ".mlp.experts.0." + proj + ".weight") != nullptr ||
                                    find_hf(fused_expert_name(layer, proj)) != nullptr ||
                                    find_hf(fused_expert_name(layer, proj) + ".weight") != nullptr);
  auto hf = hf_tensor_name(g, &config_);
  return !hf.empty() && find_hf(hf) != nullptr;
}

result<weight_ref> model_file::tensor(std::string_view g) const {
  weight_ref w;
  w.name = std::string(g);
  if (gguf_) {
    auto t = gguf_->find_tensor(g);
    if (!t) return fail(errc::parse, path_ + ": missing tensor '" + w.name + "'");
    auto type = gpu::dtype_from_ggml(t->type);
    if (!type || *type == gpu::dtype::i32) {
      std::string supported;
      for (auto d : gpu::k_all_dtypes)
        if (d != gpu::dtype::i32) supported += (supported.empty() ? "" : ", ") + std::string(gpu::traits(d).name);
      return fail(errc::unsupported, path_ + ": tensor '" + w.name + "' has unsupported type " +
                                         gguf::ggml_type_name(t->type) + " (supported: " + supported + ")");
    }
    if (t->dims.size() > 4) return fail(errc::parse, path_ + ": tensor '" + w.name + "' has more than 4 dims");
    w.type = *type;
    w.n_dims = static_cast<int>(t->dims.size());
    for (size_t i = 0; i < t->dims.size(); ++i) w.ne[i] = static_cast<int64_t>(t->dims[i]);
    w.data = t->data;
    return w;
  }
  if (config_.arch == "gpt-oss" && is_gpt_oss_fused(g)) return gpt_oss_fused(g);
  if (auto w = hf_config_tensor(config_, g)) return *std::move(w);
  if (auto [layer, proj] = hf_expert_name(g, config_); !layer.empty()) return hf_experts(g, layer, proj);
  auto hf = hf_tensor_name(g, &config_);
  auto t = hf.empty() ? nullptr : find_hf(hf);
  if (!t) return fail(errc::parse, path_ + ": missing tensor '" + (hf.empty() ? w.name : hf) + "'");
  if (!t->type) return fail(errc::unsupported, path_ + ": tensor '" + hf + "' has dtype " + t->dtype + " (supported: F32, F16, BF16)");
  if (t->shape.empty() || t->shape.size() > 4) return fail(errc::parse, path_ + ": tensor '" + hf + "' has a bad rank");
  w.type = *t->type;
  w.n_dims = static_cast<int>(t->shape.size());
  for (size_t i = 0; i < t->shape.size(); ++i) w.ne[i] = static_cast<int64_t>(t->shape[t->shape.size() - 1 - i]);
  w.data = t->data;
  auto conv = hf_hybrid_convert(config_, g, std::move(w));
  if (!conv) return fail(conv.error().code, path_ + ": " + conv.error().message);
  return conv;
}

result<std::string> default_model_path() {
  std::error_code ec;
  if (fs::is_directory("/opt/ml/model", ec)) return std::string("/opt/ml/model");
  std::vector<fs::path> candidates;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto bin = exe.parent_path();
    candidates.push_back(bin / ".." / "models" / "stories260K.gguf");         // build/vkserve
    candidates.push_back(bin / "models" / "stories260K.gguf");
    candidates.push_back(bin / ".." / "share" / "vkserve" / "models" / "stories260K.gguf");  // installed
  }
  candidates.push_back(fs::path("models") / "stories260K.gguf");
  for (auto& c : candidates)
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec).string();
  return fail(errc::not_found, "no --model given, /opt/ml/model does not exist and the demo model "
                               "models/stories260K.gguf was not found");
}

}  // namespace vks::model
