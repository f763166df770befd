// Reading model_config from GGUF metadata and from Hugging Face config.json.
#include "model/config.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "model/hf_gemma.hpp"

namespace vks::model {

bool is_known_arch(std::string_view a) {
  for (std::string_view k : {"llama", "qwen2", "qwen3", "qwen3moe", "gpt-oss", "phi3", "smollm3", "mistral3", "gemma2", "gemma3", "gemma4", "qwen35", "qwen35moe", "qwen3next"})
    if (a == k) return true;
  return false;
}

namespace {

constexpr const char* k_supported = "llama, qwen2, qwen3, qwen3moe, gpt-oss, phi3, smollm3, mistral3, gemma2, gemma3, gemma4, qwen35, qwen35moe, qwen3next";

// llama.cpp's rope type per architecture: GGUF converters permute Q/K rows of these for
// adjacent-pair ("normal") rotation; the others rotate halves.
bool normal_rope_arch(std::string_view a) { return a == "llama" || a == "smollm3" || a == "mistral3"; }

// The common value of an integer array, when it has one.
std::optional<int64_t> uniform_int(const gguf::array& a) {
  std::optional<int64_t> v;
  for (const auto& it : a.items) {
    int64_t x = 0;
    if (auto* i = std::get_if<int64_t>(&it)) x = *i;
    else if (auto* u = std::get_if<uint64_t>(&it); u && *u < (1ull << 62)) x = static_cast<int64_t>(*u);
    else return std::nullopt;
    if (v && *v != x) return std::nullopt;
    v = x;
  }
  return v;
}

}  // namespace

result<void> model_config::validate() const {
  auto bad = [&](const std::string& why) { return fail(errc::parse, "model config: " + why); };
  if (!is_known_arch(arch)) return fail(errc::unsupported, "unknown architecture '" + arch + "' (supported: " + k_supported + ")");
  if (n_layer <= 0 || n_layer > 4096) return bad("block count " + std::to_string(n_layer) + " out of range");
  if (n_embd <= 0 || n_embd > (1 << 20)) return bad("embedding length " + std::to_string(n_embd) + " out of range");
  if (n_head <= 0 || n_head > 4096) return bad("head count " + std::to_string(n_head) + " out of range");
  if (n_head_kv <= 0 || n_head_kv > n_head || n_head % n_head_kv != 0)
    return bad("kv head count " + std::to_string(n_head_kv) + " must divide head count " + std::to_string(n_head));
  if (head_dim <= 0 || head_dim > 1024 || head_dim % 2 != 0) return bad("head dim " + std::to_string(head_dim) + " invalid");
  if (head_dim_swa < 0 || head_dim_swa > 1024 || head_dim_swa % 2 != 0) return bad("sliding head dim " + std::to_string(head_dim_swa) + " invalid");
  if (!n_head_kv_layer.empty() && n_head_kv_layer.size() != static_cast<size_t>(n_layer)) return bad("per-layer kv head counts: not one per layer");
  for (int hk : n_head_kv_layer)
    if (hk <= 0 || hk > n_head || n_head % hk != 0)
      return bad("per-layer kv head count " + std::to_string(hk) + " must divide head count " + std::to_string(n_head));
  if (n_ff <= 0 || n_ff > (1 << 22)) return bad("feed-forward length " + std::to_string(n_ff) + " out of range");
  if (!n_ff_layer.empty() && n_ff_layer.size() != static_cast<size_t>(n_layer)) return bad("per-layer feed-forward lengths: not one per layer");
  for (int f : n_ff_layer)
    if (f <= 0 || f > (1 << 22)) return bad("per-layer feed-forward length " + std::to_string(f) + " out of range");
  if (n_vocab <= 0 || n_vocab > (1 << 24)) return bad("vocab size " + std::to_string(n_vocab) + " out of range");
  if (n_ctx <= 0) return bad("context length must be positive");
  if (!(rms_eps > 0.f) || rms_eps > 1.f) return bad("rms epsilon invalid");
  if (rope.n_dims <= 0 || rope.n_dims > head_dim || rope.n_dims % 2 != 0) return bad("rope dimension count invalid");
  if (!(rope.freq_base > 0.f)) return bad("rope base must be positive");
  if (n_expert != 0) {
    if (n_expert < 0 || n_expert > gpu::k_moe_max_experts) return bad("expert count " + std::to_string(n_expert) + " out of range");
    if (n_expert_used < 1 || n_expert_used > n_expert || n_expert_used > gpu::k_moe_max_used)
      return bad("experts used " + std::to_string(n_expert_used) + " must be in 1.." +
                 std::to_string(std::min<int64_t>(n_expert, gpu::k_moe_max_used)));
    if (n_ff_exp <= 0 || n_ff_exp > (1 << 22)) return bad("expert feed-forward length " + std::to_string(n_ff_exp) + " out of range");
  }
  if (n_ff_shexp < 0 || n_ff_shexp > (1 << 22) || (n_ff_shexp > 0 && n_expert == 0))
    return bad("shared expert feed-forward length " + std::to_string(n_ff_shexp) + " out of range (or without experts)");
  if (full_attn_interval != 0) {
    if (full_attn_interval < 1 || full_attn_interval > 4096) return bad("full attention interval out of range");
    if (ssm_conv_kernel < 2 || ssm_conv_kernel > 8) return bad("ssm conv kernel must be 2..8");
    if (ssm_state <= 0 || ssm_state > 512) return bad("ssm state size out of range");
    if (ssm_k_heads <= 0 || ssm_v_heads <= 0 || ssm_v_heads % ssm_k_heads != 0 || ssm_v_heads > 4096)
      return bad("ssm group count must divide the time step rank (value heads)");
  }
  return ok();
}

int model_config::max_n_ff() const {
  int f = n_ff;
  for (int x : n_ff_layer) f = std::max(f, x);
  return f;
}

int model_config::max_head_dim() const {
  int d = head_dim;
  for (int l = 0; l < n_layer; ++l) d = std::max(d, layer_head_dim(l));
  return d;
}

int64_t model_config::max_kv_width() const {
  int64_t w = int64_t{n_head_kv} * head_dim;
  for (int l = 0; l < n_layer; ++l) w = std::max(w, layer_kv_width(l));
  return w;
}

std::string model_config::summary() const {
  return arch + ": L=" + std::to_string(n_layer) + " C=" + std::to_string(n_embd) + " H=" + std::to_string(n_head) +
         "/" + std::to_string(n_head_kv) + " D=" + std::to_string(head_dim) + " F=" + std::to_string(n_ff) +
         (max_n_ff() != n_ff ? ".." + std::to_string(max_n_ff()) : "") +
         " V=" + std::to_string(n_vocab) + " ctx=" + std::to_string(n_ctx) + (tied_embeddings ? " tied" : "") +
         (is_moe() ? " experts=" + std::to_string(n_expert_used) + "/" + std::to_string(n_expert) + "x" + std::to_string(n_ff_exp) : "") +
         (rope_scaling.type != "none" ? " rope=" + rope_scaling.type + "x" + std::to_string(rope_scaling.factor).substr(0, 5) : "");
}

namespace {

// llama.cpp's reading: the type defaults to "linear" (so a bare factor or the old
// rope.scale_linear key scales linearly); "none" never scales; yarn's original context
// defaults to the trained one. llama.cpp reads no yarn_beta_* / yarn_log_multiplier keys for
// the architectures we run, so neither do we.
result<void> rope_scaling_from_gguf(const gguf::file& f, const std::string& p, model_config& c) {
  auto& rs = c.rope_scaling;
  auto type = f.get_string(p + "rope.scaling.type");
  rs.type = type ? std::string(*type) : "linear";
  double factor = 0;
  if (auto v = f.get_float(p + "rope.scaling.factor")) factor = *v;
  else if (auto v2 = f.get_float(p + "rope.scale_linear")) factor = *v2;
  rs.factor = factor == 0 ? 1.f : static_cast<float>(factor);
  if (auto a = f.get_float(p + "rope.scaling.attn_factor")) rs.attn_factor = static_cast<float>(*a);
  if (auto o = f.get_int(p + "rope.scaling.original_context_length"); o && *o > 0 && *o < (1ll << 30))
    rs.original_context = static_cast<int>(*o);
  if (rs.type == "linear" && rs.factor == 1.f && rs.attn_factor == 1.f) rs.type = "none";
  return apply_rope_scaling(c);
}

}  // namespace

result<void> apply_rope_scaling(model_config& c) {
  auto& rs = c.rope_scaling;
  auto& r = c.rope;
  if (rs.type == "none" || rs.type == "llama3") return ok();
  if (rs.type != "linear" && rs.type != "yarn")
    return fail(errc::unsupported, "rope scaling type '" + rs.type + "' is not supported (supported: none, linear, yarn, llama3)");
  if (!(rs.factor > 0.f) || rs.factor > 1e6f) return fail(errc::parse, "rope scaling factor must be positive");
  if (!(rs.attn_factor > 0.f) || rs.attn_factor > 1e3f) return fail(errc::parse, "rope scaling attn_factor must be positive");
  r.freq_scale = 1.f / rs.factor;
  r.mscale = rs.attn_factor;
  if (rs.type == "linear") return ok();
  if (!(rs.beta_fast > 0.f) || !(rs.beta_slow > 0.f)) return fail(errc::parse, "yarn beta_fast and beta_slow must be positive");
  if (!(r.freq_base > 1.f) || r.n_dims <= 0) return fail(errc::parse, "yarn needs a rope base > 1 and rope dimensions");
  const int orig = rs.original_context > 0 ? rs.original_context : c.n_ctx;
  if (orig <= 0) return fail(errc::parse, "yarn needs the original context length");
  // Pair index whose wavelength fits n_rot turns into the original context (llama.cpp's
  // ggml_rope_yarn_corr_dim).
  auto corr_dim = [&](double n_rot) {
    return r.n_dims * std::log(orig / (n_rot * 2 * M_PI)) / (2 * std::log(static_cast<double>(r.freq_base)));
  };
  r.ext_factor = 1.f;
  const double lo = corr_dim(rs.beta_fast), hi = corr_dim(rs.beta_slow);
  r.corr_low = static_cast<float>(std::max(0.0, rs.truncate ? std::floor(lo) : lo));
  r.corr_high = static_cast<float>(std::min(static_cast<double>(r.n_dims - 1), rs.truncate ? std::ceil(hi) : hi));
  if (rs.factor > 1.f) r.mscale *= static_cast<float>(1.0 + 0.1 * std::log(static_cast<double>(rs.factor)));
  return ok();
}

namespace {

// The recurrent layers of qwen35, qwen35moe and qwen3next (llama.cpp's hparams of each): ssm.* sizes, full_attention_interval
// (default 4), q/k norms; ssm.inner_size must be Hv * S.
result<void> hybrid_from_gguf(const gguf::file& f, const std::string& p, model_config& c) {
  auto get = [&](const char* key, int& out) {
    auto v = f.get_int(p + key);
    out = v && *v > 0 && *v < (1ll << 30) ? static_cast<int>(*v) : 0;
  };
  int inner = 0;
  get("ssm.conv_kernel", c.ssm_conv_kernel);
  get("ssm.state_size", c.ssm_state);
  get("ssm.group_count", c.ssm_k_heads);
  get("ssm.time_step_rank", c.ssm_v_heads);
  get("ssm.inner_size", inner);
  c.full_attn_interval = 4;
  if (f.get_int(p + "full_attention_interval")) get("full_attention_interval", c.full_attn_interval);
  if (f.get_array(p + "attention.recurrent_layers"))
    return fail(errc::unsupported, c.arch + " with an explicit recurrent layer list is not supported (full_attention_interval only)");
  if (c.ssm_conv_kernel == 0 || c.ssm_state == 0 || c.ssm_k_heads == 0 || c.ssm_v_heads == 0)
    return fail(errc::parse, c.arch + " needs ssm.conv_kernel, ssm.state_size, ssm.group_count and ssm.time_step_rank");
  if (inner != c.ssm_v_heads * c.ssm_state) return fail(errc::parse, c.arch + ": ssm.inner_size is not time_step_rank * state_size");
  c.qk_norm = true;
  return ok();
}

// Gemma 4's per-layer attention shapes (llama.cpp's hparams): the global layers' heads are
// attention.key_length wide (head_dim), the sliding ones' attention.key_length_swa
// (head_dim_swa); V heads as wide as K heads in each kind (llama.cpp requires it); the KV head
// count per layer from an attention.head_count_kv array (c.n_head_kv: the first global
// layer's); rope on rope.dimension_count of a global head, rope.dimension_count_swa
// (default: the former) of a sliding one. Call after the sliding-layer list is read.
result<void> gemma4_head_shapes(const gguf::file& f, const std::string& p, model_config& c) {
  auto count = [&](const char* key, int dflt, int& out) -> result<void> {
    auto v = f.get_int(p + key);
    out = dflt;
    if (!v) return ok();
    if (*v <= 0 || *v > 1024) return fail(errc::parse, "gemma4: " + p + key + " out of range");
    out = static_cast<int>(*v);
    return ok();
  };
  int vlen = 0, klen_swa = 0, vlen_swa = 0;
  VKS_TRY(count("attention.value_length", c.head_dim, vlen));
  VKS_TRY(count("attention.key_length_swa", c.head_dim, klen_swa));
  VKS_TRY(count("attention.value_length_swa", klen_swa, vlen_swa));
  if (vlen != c.head_dim || vlen_swa != klen_swa)
    return fail(errc::unsupported, "gemma4 with value heads of another size than key heads (value_length " + std::to_string(vlen) +
                                       " / key_length " + std::to_string(c.head_dim) + ", value_length_swa " + std::to_string(vlen_swa) +
                                       " / key_length_swa " + std::to_string(klen_swa) + ") is not supported (nor by llama.cpp)");
  if (c.head_dim > 512 || klen_swa > 512)  // the attention kernels' limit (gpu/vk attention, rope_kv)
    return fail(errc::unsupported, "gemma4 with heads wider than 512 (key_length " + std::to_string(c.head_dim) + ", key_length_swa " +
                                       std::to_string(klen_swa) + ") is not supported");
  c.head_dim_swa = klen_swa == c.head_dim ? 0 : klen_swa;
  if (const auto* a = f.get_array(p + "attention.head_count_kv")) {
    if (a->items.size() != static_cast<size_t>(c.n_layer))
      return fail(errc::parse, "gemma4: attention.head_count_kv must hold one count per layer");
    for (const auto& it : a->items) {
      int64_t x = -1;
      if (auto* i = std::get_if<int64_t>(&it)) x = *i;
      else if (auto* u = std::get_if<uint64_t>(&it); u && *u < (1ull << 30)) x = static_cast<int64_t>(*u);
      if (x <= 0 || x > c.n_head || c.n_head % x != 0)
        return fail(errc::parse, "gemma4: attention.head_count_kv values must divide the head count");
      c.n_head_kv_layer.push_back(static_cast<int>(x));
    }
    int first_global = 0;
    while (first_global + 1 < c.n_layer && c.is_swa_layer(first_global)) ++first_global;
    c.n_head_kv = c.n_head_kv_layer[static_cast<size_t>(first_global)];
    if (std::all_of(c.n_head_kv_layer.begin(), c.n_head_kv_layer.end(), [&](int x) { return x == c.n_head_kv; }))
      c.n_head_kv_layer.clear();
  }
  VKS_TRY(count("rope.dimension_count_swa", c.rope.n_dims, c.rope_n_dims_swa));
  const int dswa = c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim;
  if (c.rope_n_dims_swa > dswa || c.rope_n_dims_swa % 2 != 0)
    return fail(errc::parse, "gemma4: rope.dimension_count_swa invalid (at most the sliding head size " + std::to_string(dswa) + ")");
  return ok();
}

// Gemma 4's feed-forward widths: feed_forward_length a scalar, or (llama.cpp's n_ff_arr;
// E2B/E4B, whose KV-shared layers are twice as wide) one width per layer. A uniform array
// is the scalar (config_from_gguf read it); one whose values differ sets n_ff_layer.
result<void> gemma4_ffn_widths(const gguf::file& f, const std::string& p, model_config& c) {
  const auto* a = f.get_array(p + "feed_forward_length");
  if (!a) return c.n_ff > 0 ? ok() : fail(errc::parse, "gemma4: missing or invalid " + p + "feed_forward_length");
  if (uniform_int(*a)) return ok();
  if (a->items.size() != static_cast<size_t>(c.n_layer))
    return fail(errc::parse, "gemma4: feed_forward_length must hold one width per layer");
  for (const auto& it : a->items) {
    int64_t x = -1;
    if (auto* i = std::get_if<int64_t>(&it)) x = *i;
    else if (auto* u = std::get_if<uint64_t>(&it); u && *u < (1ull << 30)) x = static_cast<int64_t>(*u);
    if (x <= 0 || x > (1 << 22)) return fail(errc::parse, "gemma4: feed_forward_length values must be in 1..2^22");
    c.n_ff_layer.push_back(static_cast<int>(x));
  }
  c.n_ff = c.n_ff_layer[0];
  return ok();
}

// Gemma 4 (text; llama.cpp's gemma4 hparams and graph): the Gemma 3 layer plus the sliding
// layers as a bool array, a V norm, attention scale 1, final soft-cap 30 unless the file
// says, sliding rope base 10000 unless rope.freq_base_swa says, per-layer embeddings and
// KV-shared trailing layers; per-layer head shapes (gemma4_head_shapes). The MoE layers
// (26B-A4B): the expert keys below.
result<void> gemma4_from_gguf(const gguf::file& f, const std::string& p, model_config& c) {
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.post_norms = c.gelu_ffn = c.qk_norm = c.v_norm = true;
  c.attn_scale = 1.f;
  auto count = [&](int& out, const char* key, int dflt) -> result<void> {
    auto v = f.get_int(p + key);
    out = dflt;
    if (!v) return ok();
    if (*v < 0 || *v >= (1ll << 30)) return fail(errc::parse, "gemma4: " + p + key + " out of range");
    out = static_cast<int>(*v);
    return ok();
  };
  VKS_TRY(count(c.sliding_window, "attention.sliding_window", 0));
  if (c.sliding_window == 0) return fail(errc::parse, "gemma4 needs attention.sliding_window");
  const auto* pat = f.get_array(p + "attention.sliding_window_pattern");
  if (!pat || pat->items.size() != static_cast<size_t>(c.n_layer))
    return fail(errc::parse, "gemma4 needs attention.sliding_window_pattern: one bool per layer");
  for (const auto& it : pat->items) {
    const bool* b = std::get_if<bool>(&it);
    if (!b) return fail(errc::parse, "gemma4: attention.sliding_window_pattern must hold bools");
    c.swa_layers.push_back(*b ? 1 : 0);
  }
  VKS_TRY(gemma4_head_shapes(f, p, c));
  VKS_TRY(gemma4_ffn_widths(f, p, c));
  c.rope_freq_base_swa = 10000.f;
  if (auto b = f.get_float(p + "rope.freq_base_swa"); b && *b > 0) c.rope_freq_base_swa = static_cast<float>(*b);
  c.final_softcap = 30.f;
  if (auto a = f.get_float(p + "final_logit_softcapping"); a && *a >= 0) c.final_softcap = static_cast<float>(*a);
  VKS_TRY(count(c.n_embd_per_layer, "embedding_length_per_layer_input", 0));
  VKS_TRY(count(c.n_kv_shared, "attention.shared_kv_layers", 0));
  if (c.n_kv_shared > 0) {  // llama.cpp's reuse rule needs a sliding then a global layer before the shared ones
    const int first = c.n_layer - c.n_kv_shared;
    if (first < 2 || !c.is_swa_layer(first - 2) || c.is_swa_layer(first - 1))
      return fail(errc::parse, "gemma4: attention.shared_kv_layers needs a sliding then a global layer just before the shared ones");
  }
  // MoE layers (26B-A4B; model/gemma4_moe.hpp): llama.cpp's gemma4 fixes softmax gating with
  // the top k renormalised and no scale, whatever expert_gating_func / expert_weights_norm say.
  VKS_TRY(count(c.n_expert, "expert_count", 0));
  if (c.n_expert > 0) {
    VKS_TRY(count(c.n_expert_used, "expert_used_count", 0));
    VKS_TRY(count(c.n_ff_exp, "expert_feed_forward_length", 0));
    if (const auto* a = f.get_array(p + "expert_feed_forward_length")) {  // a per-layer array: uniform only
      const auto v = uniform_int(*a);
      if (!v || *v <= 0 || *v >= (1ll << 30)) return fail(errc::unsupported, "gemma4: per-layer expert_feed_forward_length values differ");
      c.n_ff_exp = static_cast<int>(*v);
    }
    c.expert_gating = gpu::moe_gating::softmax;
    c.expert_norm = true;
  }
  return ok();
}

// What the dense families add to the llama layer (llama.cpp's load_hparams / graph facts).
result<void> family_from_gguf(const gguf::file& f, const std::string& p, model_config& c) {
  if (auto s = f.get_float(p + "attention.scale"); s && *s != 0) c.attn_scale = static_cast<float>(*s);
  if (c.arch == "phi3") {
    c.fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
    c.fused_gate_up = true;
    c.longrope = f.find_tensor("rope_factors_long.weight") || f.find_tensor("rope_factors_short.weight");
  }
  if (c.arch == "smollm3") c.no_rope_layer_step = 4;  // llama.cpp hard-codes it (no GGUF key)
  if (c.arch == "gemma2" || c.arch == "gemma3") {
    // llama.cpp's gemma hparams: sliding window on alternate layers (gemma2, default 4096) or
    // five of every six (gemma3; local rope base 10000 unscaled); soft-capping defaults
    // 50 / 30 (gemma2; gemma3 with a sliding window applies none); 27B-sized models scale
    // q by 1/sqrt(C/H), others by 1/sqrt(D).
    const bool g2 = c.arch == "gemma2";
    c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
    c.post_norms = c.gelu_ffn = true;
    c.qk_norm = !g2;
    c.swa_pattern = g2 ? 2 : 6;
    c.sliding_window = g2 ? 4096 : 0;
    if (auto w = f.get_int(p + "attention.sliding_window"); w && *w >= 0 && *w < (1ll << 30)) c.sliding_window = static_cast<int>(*w);
    if (!g2) {
      c.rope_freq_base_swa = 10000.f;
      if (auto b = f.get_float(p + "rope.freq_base_swa"); b && *b > 0) c.rope_freq_base_swa = static_cast<float>(*b);
    }
    if (g2) {
      c.attn_softcap = 50.f;
      c.final_softcap = 30.f;
      if (auto a = f.get_float(p + "attn_logit_softcapping"); a && *a >= 0) c.attn_softcap = static_cast<float>(*a);
      if (auto a = f.get_float(p + "final_logit_softcapping"); a && *a >= 0) c.final_softcap = static_cast<float>(*a);
    } else if (c.sliding_window == 0) {
      c.final_softcap = 30.f;
      if (auto a = f.get_float(p + "final_logit_softcapping"); a && *a >= 0) c.final_softcap = static_cast<float>(*a);
    }
    const bool big = c.n_layer == (g2 ? 46 : 62);
    c.attn_scale = 1.f / std::sqrt(static_cast<float>(big ? c.n_embd / c.n_head : c.head_dim));
  }
  if (c.arch == "gemma4") VKS_TRY(gemma4_from_gguf(f, p, c));
  auto count = [&](const char* key) -> int {
    auto v = f.get_int(p + key);
    return v && *v > 0 && *v < (1ll << 30) ? static_cast<int>(*v) : 0;
  };
  const bool hybrid_moe = c.arch == "qwen35moe" || c.arch == "qwen3next";
  if (c.arch == "qwen3moe" || c.arch == "gpt-oss" || hybrid_moe) {
    c.n_expert = count("expert_count");
    c.n_expert_used = count("expert_used_count");
    if (c.n_expert == 0 || c.n_expert_used == 0) return fail(errc::parse, c.arch + " needs expert_count and expert_used_count");
    c.n_ff_exp = count("expert_feed_forward_length");
    if (c.n_ff_exp == 0) c.n_ff_exp = c.n_ff / c.n_expert_used;
    if (hybrid_moe && c.n_ff == 0) c.n_ff = c.n_ff_exp;  // every layer is MoE: n_ff sizes nothing else
  }
  if (c.arch == "qwen3moe" || hybrid_moe) {  // llama.cpp: softmax gating, weights always normalised
    c.expert_gating = gpu::moe_gating::softmax;
    c.expert_norm = true;
  }
  if (hybrid_moe) {  // the sigmoid-gated shared expert (expert_shared_feed_forward_length, else n_ff)
    c.n_ff_shexp = count("expert_shared_feed_forward_length");
    if (c.n_ff_shexp == 0) c.n_ff_shexp = c.n_ff;
  }
  if (c.arch == "gpt-oss") {
    // llama.cpp's openai-moe: softmax over the k selected router logits (no normalisation),
    // q/k/v/o biases, sinks, the clamped SwiGLU; sliding window (a required key) on every
    // other layer from 0, the full layers' rope base for both.
    c.expert_gating = gpu::moe_gating::softmax_selected;
    c.qkv_bias = c.attn_sinks = c.attn_out_bias = c.expert_bias = c.swiglu_oai = true;
    c.sliding_window = count("attention.sliding_window");
    if (c.sliding_window == 0) return fail(errc::parse, "gpt-oss needs attention.sliding_window");
    c.swa_pattern = 2;
    if (auto sp = f.get_int(p + "attention.sliding_window_pattern"); sp && *sp != 2)
      return fail(errc::unsupported, "gpt-oss: a sliding-window pattern other than every other layer is not supported");
    if (auto b = f.get_float(p + "rope.freq_base_swa"); b && static_cast<float>(*b) != c.rope.freq_base)
      return fail(errc::unsupported, "gpt-oss: a sliding-window rope base other than the full layers' is not supported");
  }
  if (c.arch == "qwen35" || hybrid_moe) VKS_TRY(hybrid_from_gguf(f, p, c));
  if (c.arch == "mistral3") {
    if (auto t = f.get_float(p + "attention.temperature_scale"); t && *t != 0)
      return fail(errc::unsupported, "mistral3 attention temperature scaling (llama 4 style) is not supported");
  }
  return ok();
}

}  // namespace

result<model_config> config_from_gguf(const gguf::file& f) {
  model_config c;
  auto arch = f.get_string("general.architecture");
  if (!arch) return fail(errc::parse, f.path() + ": missing general.architecture");
  c.arch = *arch;
  if (!is_known_arch(c.arch))
    return fail(errc::unsupported, f.path() + ": unknown architecture '" + c.arch + "' (supported: " + k_supported + ")");
  const std::string p = c.arch + ".";
  // Per-layer arrays (gemma4 writes head_count_kv / feed_forward_length so) load when every
  // layer has the same value; other arrays are refused by name.
  for (const char* key : {"feed_forward_length", "attention.head_count", "attention.head_count_kv"})
    if (auto* a = f.get_array(p + key); a && !uniform_int(*a) && !(c.arch == "gemma4" && std::string_view(key) != "attention.head_count"))
      return fail(errc::unsupported, f.path() + ": per-layer " + p + key + " values differ (not supported)");
  auto need = [&](const char* key, int& out) -> bool {
    auto v = f.get_int(p + key);
    if (auto* a = f.get_array(p + key); !v && a) v = uniform_int(*a);
    if (!v || *v <= 0 || *v > (1ll << 30)) return false;
    out = static_cast<int>(*v);
    return true;
  };
  for (auto [key, dst] : {std::pair{"block_count", &c.n_layer}, {"embedding_length", &c.n_embd},
                          {"attention.head_count", &c.n_head}, {"feed_forward_length", &c.n_ff}})
    if (!need(key, *dst) && !(dst == &c.n_ff && (c.arch == "qwen35moe" || c.arch == "qwen3next" || c.arch == "gemma4")))
      return fail(errc::parse, f.path() + ": missing or invalid " + p + key);
  c.n_head_kv = c.n_head;
  need("attention.head_count_kv", c.n_head_kv);
  c.head_dim = c.n_embd / c.n_head;
  need("attention.key_length", c.head_dim);
  c.n_ctx = 4096;
  need("context_length", c.n_ctx);
  if (auto e = f.get_float(p + "attention.layer_norm_rms_epsilon")) c.rms_eps = static_cast<float>(*e);
  c.rope.mode = normal_rope_arch(c.arch) ? gpu::rope_mode::normal : gpu::rope_mode::neox;
  c.rope.n_dims = c.head_dim;
  need("rope.dimension_count", c.rope.n_dims);
  c.rope.freq_base = c.arch == "qwen2" || c.arch == "qwen3" || c.arch == "qwen3moe" ? 1000000.f : 10000.f;
  if (auto b = f.get_float(p + "rope.freq_base")) c.rope.freq_base = static_cast<float>(*b);
  if (auto r = rope_scaling_from_gguf(f, p, c); !r) return fail(r.error().code, f.path() + ": " + r.error().message);
  // Vocab: explicit key, else the tokenizer's size, else token_embd's row count.
  if (auto v = f.get_int(p + "vocab_size")) c.n_vocab = static_cast<int>(*v);
  else if (auto a = f.get_array("tokenizer.ggml.tokens")) c.n_vocab = static_cast<int>(a->items.size());
  if (auto t = f.find_tensor("token_embd.weight"); t && t->dims.size() == 2) c.n_vocab = static_cast<int>(t->dims[1]);
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  c.qkv_bias = c.arch == "qwen2";  // gpt-oss: family_from_gguf
  c.qk_norm = c.arch == "qwen3" || c.arch == "qwen3moe";
  if (auto r = family_from_gguf(f, p, c); !r) return fail(r.error().code, f.path() + ": " + r.error().message);
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

// transformers' yarn attention_factor, divided by the 1 + 0.1 ln(factor) that
// apply_rope_scaling multiplies in: explicit attention_factor, else mscale /
// mscale_all_dim's ratio, else nothing extra.
float hf_yarn_attn_factor(const json& rs, float factor) {
  auto get_mscale = [](double f, double m) { return f <= 1 ? 1.0 : 0.1 * m * std::log(f) + 1.0; };
  const double base = get_mscale(factor, 1.0);
  if (auto a = rs.find("attention_factor"); a != rs.end() && a->is_number()) return static_cast<float>(a->get<double>() / base);
  auto m = rs.find("mscale"), ma = rs.find("mscale_all_dim");
  if (m != rs.end() && ma != rs.end() && m->is_number() && ma->is_number())
    return static_cast<float>(get_mscale(factor, m->get<double>()) / get_mscale(factor, ma->get<double>()) / base);
  return 1.f;
}

// Gemma 2/3 from transformers' config: the same model_config fields as the GGUF reading
// (family_from_gguf), from the checkpoint's own keys: query_pre_attn_scalar (q scale),
// sliding_window and its pattern (gemma2: every other layer from 0; gemma3:
// sliding_window_pattern or layer_types), soft-caps (null = none), rope_local_base_freq.
result<void> gemma_from_hf(const json& j, model_config& c) {
  const bool g2 = c.arch == "gemma2";
  auto num_or_zero = [&](const char* k, double def) {
    auto it = j.find(k);
    return it == j.end() ? def : it->is_number() ? it->get<double>() : 0.0;  // null: off
  };
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.post_norms = c.gelu_ffn = true;
  c.qk_norm = !g2;
  c.tied_embeddings = j.value("tie_word_embeddings", true);
  c.sliding_window = static_cast<int>(num_or_zero("sliding_window", g2 ? 4096 : 0));
  c.swa_pattern = g2 ? 2 : get_int(j, "sliding_window_pattern", 6);
  if (auto lt = j.find("layer_types"); !g2 && lt != j.end() && lt->is_array()) {
    int p = 0;  // the pattern: p - 1 sliding layers, then one full
    while (p < static_cast<int>(lt->size()) && (*lt)[static_cast<size_t>(p)] == "sliding_attention") ++p;
    c.swa_pattern = p + 1;
    for (size_t l = 0; l < lt->size(); ++l)
      if (((*lt)[l] == "sliding_attention") != c.is_swa_layer(static_cast<int>(l)))
        return fail(errc::unsupported, "config.json: layer_types is not a repeating sliding/full pattern");
  }
  if (c.swa_pattern <= 0 || c.sliding_window < 0) return fail(errc::parse, "config.json: invalid sliding window");
  c.rope_freq_base_swa = g2 ? 0.f : static_cast<float>(get_num(j, "rope_local_base_freq", 10000.0));
  c.attn_softcap = g2 ? static_cast<float>(num_or_zero("attn_logit_softcapping", 50.0)) : 0.f;
  c.final_softcap = static_cast<float>(num_or_zero("final_logit_softcapping", g2 ? 30.0 : 0.0));
  const double qs = get_num(j, "query_pre_attn_scalar", c.head_dim);
  if (!(qs > 0)) return fail(errc::parse, "config.json: invalid query_pre_attn_scalar");
  c.attn_scale = static_cast<float>(1.0 / std::sqrt(qs));
  if (auto a = j.value("hidden_activation", j.value("hidden_act", std::string("gelu_pytorch_tanh")));
      a != "gelu_pytorch_tanh" && a != "gelu_tanh")
    return fail(errc::unsupported, "config.json: Gemma activation '" + a + "' is not supported (gelu_pytorch_tanh)");
  return ok();
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
  if (name == "SmolLM3ForCausalLM" || name == "smollm3") return std::string("smollm3");
  if (name == "Phi3ForCausalLM" || name == "phi3") return std::string("phi3");
  if (name == "Gemma2ForCausalLM" || name == "gemma2") return std::string("gemma2");
  if (name == "Gemma3ForCausalLM" || name == "gemma3_text") return std::string("gemma3");
  if (name == "Qwen3MoeForCausalLM" || name == "qwen3_moe") return std::string("qwen3moe");
  if (name == "GptOssForCausalLM" || name == "gpt_oss") return std::string("gpt-oss");
  // Qwen3.5 (dense and MoE; the multimodal wrappers' text_config and language_model tensors
  // are read, the vision tower ignored) and Qwen3-Next.
  if (name == "Qwen3_5ForCausalLM" || name == "Qwen3_5ForConditionalGeneration" || name == "qwen3_5" ||
      name == "qwen3_5_text")
    return std::string("qwen35");
  if (name == "Qwen3_5MoeForCausalLM" || name == "Qwen3_5MoeForConditionalGeneration" || name == "qwen3_5_moe" ||
      name == "qwen3_5_moe_text")
    return std::string("qwen35moe");
  if (name == "Qwen3NextForCausalLM" || name == "qwen3_next") return std::string("qwen3next");
  // Mistral Small 3.x (the multimodal checkpoint: its text_config and language_model
  // tensors are read, the vision tower ignored) and Ministral 3.
  if (name == "Mistral3ForConditionalGeneration" || name == "Ministral3ForCausalLM" || name == "mistral3" ||
      name == "ministral3")
    return std::string("mistral3");
  // Gemma 3 and Gemma 4 multimodal checkpoints: their text_config and language-model tensors
  // (model/hf_gemma.hpp), the vision and audio towers ignored.
  if (name == "Gemma3ForConditionalGeneration" || name == "gemma3") return std::string("gemma3");
  if (name == "Gemma4ForCausalLM" || name == "Gemma4ForConditionalGeneration" || name == "gemma4" || name == "gemma4_text")
    return std::string("gemma4");
  return fail(errc::unsupported, "config.json: unknown architecture '" + name +
                                     "' (supported: Llama, Mistral, Mistral3, Qwen2, Qwen3, Qwen3 MoE, gpt-oss, SmolLM3, Phi3, "
                                     "Gemma2, Gemma3, Gemma4, Qwen3.5, Qwen3.5 MoE, Qwen3-Next)");
}

// Qwen3 MoE from transformers' config (llama.cpp's qwen3moe facts: softmax router; the
// top-k weights renormalised unless norm_topk_prob is false). Every layer sparse.
result<void> moe_from_hf(const json& j, model_config& c) {
  c.n_expert = get_int(j, "num_experts", 0);
  c.n_expert_used = get_int(j, "num_experts_per_tok", 0);
  c.n_ff_exp = get_int(j, "moe_intermediate_size", 0);
  if (c.n_expert <= 0 || c.n_expert_used <= 0 || c.n_ff_exp <= 0)
    return fail(errc::parse, "config.json: qwen3_moe needs num_experts, num_experts_per_tok and moe_intermediate_size");
  if (get_int(j, "decoder_sparse_step", 1) != 1)
    return fail(errc::unsupported, "config.json: decoder_sparse_step other than 1 (dense layers between MoE ones) is not supported");
  if (auto m = j.find("mlp_only_layers"); m != j.end() && m->is_array() && !m->empty())
    return fail(errc::unsupported, "config.json: mlp_only_layers (dense layers in a MoE model) is not supported");
  c.expert_gating = gpu::moe_gating::softmax;
  c.expert_norm = j.value("norm_topk_prob", true);
  return ok();
}

// gpt-oss from transformers' GptOssConfig (the facts llama.cpp's converter writes into GGUF):
// num_local_experts, num_experts_per_tok (or experts_per_token), intermediate_size is each
// expert's width, sliding_window on the layers layer_types marks (llama.cpp runs every other
// layer from 0: anything else is refused), attention_bias (the model has every bias),
// swiglu_limit. Softmax over the selected router logits, sinks, the clamped SwiGLU.
result<void> gpt_oss_from_hf(const json& j, model_config& c) {
  c.n_expert = get_int(j, "num_local_experts", 0);
  c.n_expert_used = get_int(j, "num_experts_per_tok", get_int(j, "experts_per_token", 0));
  c.n_ff_exp = c.n_ff;
  if (c.n_expert <= 0 || c.n_expert_used <= 0 || c.n_ff_exp <= 0)
    return fail(errc::parse, "config.json: gpt_oss needs num_local_experts, num_experts_per_tok and intermediate_size");
  if (!j.value("attention_bias", true))
    return fail(errc::unsupported, "config.json: gpt_oss without attention biases is not supported");
  c.expert_gating = gpu::moe_gating::softmax_selected;
  c.qkv_bias = c.attn_sinks = c.attn_out_bias = c.expert_bias = c.swiglu_oai = true;
  c.tied_embeddings = j.value("tie_word_embeddings", false);
  c.sliding_window = get_int(j, "sliding_window", 0);
  if (c.sliding_window <= 0) return fail(errc::parse, "config.json: gpt_oss needs a positive sliding_window");
  c.swa_pattern = 2;
  if (auto lt = j.find("layer_types"); lt != j.end() && lt->is_array())
    for (size_t l = 0; l < lt->size(); ++l)
      if (((*lt)[l] == "sliding_attention") != c.is_swa_layer(static_cast<int>(l)))
        return fail(errc::unsupported, "config.json: gpt_oss layer_types other than sliding on every other layer from 0");
  const double limit = get_num(j, "swiglu_limit", 7.0);
  if (!(limit > 0) || limit > 1e6) return fail(errc::parse, "config.json: invalid swiglu_limit");
  c.swiglu_limit = static_cast<float>(limit);
  return ok();
}

// Qwen3.5 / Qwen3-Next from transformers' config (llama.cpp's converter facts): the gated
// DeltaNet sizes linear_*, full attention every full_attention_interval-th layer (layer_types
// must agree), partial rotary (default 0.25; transformers 5 keeps it in rope_parameters), and
// for the MoE ones the shared expert's width.
result<void> hybrid_from_hf(const json& j, const json* rope_obj, model_config& c) {
  c.ssm_conv_kernel = get_int(j, "linear_conv_kernel_dim", 0);
  c.ssm_state = get_int(j, "linear_key_head_dim", 0);
  c.ssm_k_heads = get_int(j, "linear_num_key_heads", 0);
  c.ssm_v_heads = get_int(j, "linear_num_value_heads", 0);
  if (c.ssm_conv_kernel <= 0 || c.ssm_state <= 0 || c.ssm_k_heads <= 0 || c.ssm_v_heads <= 0)
    return fail(errc::parse, "config.json: " + c.arch + " needs linear_conv_kernel_dim, linear_key_head_dim, "
                             "linear_num_key_heads and linear_num_value_heads");
  if (get_int(j, "linear_value_head_dim", c.ssm_state) != c.ssm_state)
    return fail(errc::unsupported, "config.json: linear_value_head_dim other than linear_key_head_dim is not supported");
  c.full_attn_interval = get_int(j, "full_attention_interval", 4);
  if (c.full_attn_interval <= 0) return fail(errc::parse, "config.json: invalid full_attention_interval");
  if (auto lt = j.find("layer_types"); lt != j.end() && lt->is_array()) {
    if (static_cast<int>(lt->size()) != c.n_layer) return fail(errc::parse, "config.json: layer_types is not one entry a layer");
    for (size_t l = 0; l < lt->size(); ++l)
      if (((*lt)[l] == "linear_attention") != c.is_recurrent_layer(static_cast<int>(l)))
        return fail(errc::unsupported, "config.json: layer_types is not full attention every full_attention_interval-th layer");
  }
  if (j.value("attn_output_gate", true) == false)
    return fail(errc::unsupported, "config.json: " + c.arch + " without its attention output gate is not supported");
  double prf = 0.25;
  if (auto it = j.find("partial_rotary_factor"); it != j.end() && it->is_number()) prf = it->get<double>();
  else if (rope_obj) prf = get_num(*rope_obj, "partial_rotary_factor", prf);
  const int n = static_cast<int>(std::lround(prf * c.head_dim));
  if (!(prf > 0 && prf <= 1) || n % 2 != 0) return fail(errc::parse, "config.json: invalid partial_rotary_factor");
  c.rope.n_dims = n;
  c.qk_norm = true;
  if (c.arch == "qwen35") return ok();
  VKS_TRY(moe_from_hf(j, c));
  c.expert_norm = true;  // llama.cpp's qwen35moe / qwen3next always renormalise the top-k weights
  c.n_ff_shexp = get_int(j, "shared_expert_intermediate_size", 0);
  if (c.n_ff_shexp <= 0) return fail(errc::parse, "config.json: " + c.arch + " needs shared_expert_intermediate_size");
  if (c.n_ff <= 0) c.n_ff = c.n_ff_exp;  // every layer is MoE: n_ff sizes nothing else
  return ok();
}

// transformers 5 keeps rope_theta and the scaling in one rope_parameters object.
const json* rope_object(const json& j) {
  for (const char* k : {"rope_scaling", "rope_parameters"})
    if (auto it = j.find(k); it != j.end() && it->is_object()) return &*it;
  return nullptr;
}

result<model_config> parse_hf(const json& top) {
  if (!top.is_object()) return fail(errc::parse, "config.json: not a JSON object");
  auto arch = arch_of(top);
  if (!arch) return fail(std::move(arch).error());
  // Multimodal wrappers (Mistral3ForConditionalGeneration) keep the decoder's fields in
  // text_config.
  const auto tc = top.find("text_config");
  auto text = hf_gemma_text_config(*arch, tc != top.end() && tc->is_object() ? *tc : top);  // Gemma: transformers' defaults
  if (!text) return fail(std::move(text).error());
  const json& j = *text;
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
  if (auto pr = j.find("partial_rotary_factor"); pr != j.end() && pr->is_number()) {  // Phi-4-mini: 0.75
    const double f = pr->get<double>();
    const int n = static_cast<int>(std::lround(f * c.head_dim));
    if (!(f > 0 && f <= 1) || n % 2 != 0) return fail(errc::parse, "config.json: invalid partial_rotary_factor");
    c.rope.n_dims = n;
  }
  c.fused_qkv = c.fused_gate_up = c.arch == "phi3";  // qkv_proj, gate_up_proj
  const json* rope_obj = rope_object(j);
  c.rope.freq_base = static_cast<float>(get_num(j, "rope_theta", rope_obj ? get_num(*rope_obj, "rope_theta", 10000.0) : 10000.0));
  c.tied_embeddings = j.value("tie_word_embeddings", top.value("tie_word_embeddings", c.arch != "llama" && c.arch != "mistral3"));
  c.qkv_bias = c.arch == "qwen2" || (c.arch == "llama" && j.value("attention_bias", false));
  c.qk_norm = c.arch == "qwen3" || c.arch == "qwen3moe";
  if (c.arch == "qwen3moe") VKS_TRY(moe_from_hf(j, c));
  if (c.arch == "gpt-oss") VKS_TRY(gpt_oss_from_hf(j, c));
  if (c.arch == "qwen35" || c.arch == "qwen35moe" || c.arch == "qwen3next") VKS_TRY(hybrid_from_hf(j, rope_obj, c));
  if (c.arch == "smollm3") {  // no_rope_layers[l] == 0: layer l without rope; we run llama.cpp's every-Nth rule
    c.no_rope_layer_step = get_int(j, "no_rope_layer_interval", 4);
    if (c.no_rope_layer_step <= 0) return fail(errc::parse, "config.json: invalid no_rope_layer_interval");
    if (auto nr = j.find("no_rope_layers"); nr != j.end() && nr->is_array())
      for (size_t l = 0; l < nr->size(); ++l)
        if (!(*nr)[l].is_number_integer() ||
            ((*nr)[l].get<int64_t>() != 0) != ((static_cast<int>(l) + 1) % c.no_rope_layer_step != 0))
          return fail(errc::unsupported, "config.json: no_rope_layers is not every " +
                                             std::to_string(c.no_rope_layer_step) + "th layer");
  }
  if (c.arch == "gemma2" || c.arch == "gemma3") VKS_TRY(gemma_from_hf(j, c));
  if (c.arch == "gemma4") VKS_TRY(gemma4_from_hf(j, c));
  c.bos_id = first_id(top.contains("bos_token_id") ? top : j, "bos_token_id");
  c.eos_id = first_id(top.contains("eos_token_id") ? top : j, "eos_token_id");
  if (rope_obj) {
    const json* rs = rope_obj;
    if (auto b = rs->find("llama_4_scaling_beta"); b != rs->end() && b->is_number() && b->get<double>() != 0)
      return fail(errc::unsupported, "config.json: llama-4-style attention temperature scaling (llama_4_scaling_beta) is not supported");
    std::string type = rs->value("rope_type", rs->value("type", std::string()));
    if (type == "llama3") {
      auto& s = c.rope_llama3;
      s.enabled = true;
      c.rope_scaling.type = "llama3";
      s.factor = static_cast<float>(get_num(*rs, "factor", 8.0));
      s.low_freq_factor = static_cast<float>(get_num(*rs, "low_freq_factor", 1.0));
      s.high_freq_factor = static_cast<float>(get_num(*rs, "high_freq_factor", 4.0));
      s.original_context = get_int(*rs, "original_max_position_embeddings", 8192);
      if (!(s.factor > 0) || !(s.high_freq_factor > s.low_freq_factor) || s.original_context <= 0)
        return fail(errc::parse, "config.json: invalid llama3 rope_scaling");
    } else if (type == "linear" || type == "yarn") {
      auto& s = c.rope_scaling;
      s.type = type;
      s.factor = static_cast<float>(get_num(*rs, "factor", 1.0));
      s.original_context = get_int(*rs, "original_max_position_embeddings", c.n_ctx);
      s.beta_fast = static_cast<float>(get_num(*rs, "beta_fast", 32.0));
      s.beta_slow = static_cast<float>(get_num(*rs, "beta_slow", 1.0));
      s.truncate = rs->value("truncate", true);
      if (type == "yarn") s.attn_factor = hf_yarn_attn_factor(*rs, s.factor);
      if (auto r = apply_rope_scaling(c); !r) return fail(r.error().code, "config.json: " + r.error().message);
    } else if (!type.empty() && type != "default") {
      return fail(errc::unsupported, "config.json: rope_scaling type '" + type +
                                         "' is not supported (supported: default, linear, yarn, llama3)");
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
