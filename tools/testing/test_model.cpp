// Seeded-random model writers. Values are generated per (tensor name, row) in the
// Hugging Face layout; the GGUF llama writer permutes Q/K rows the way llama.cpp's converter
// does (so the GGUF file with `normal` RoPE and the HF directory with `neox` RoPE compute
// the same function: a test checks it).
#include "testing/test_model.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "gpu/quant.hpp"
#include "model/gguf_writer.hpp"
#include "model/model_file.hpp"
#include "model/safetensors.hpp"
#include "testing/hf_gemma_writer.hpp"
#include "testing/presets.hpp"

namespace vks::model {
namespace {

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

enum class init { normal, ones_jitter };

// One tensor's values: row r (HF layout) of n_cols elements, std `scale` (or 1 + jitter).
struct value_source {
  uint64_t seed;
  float scale;
  init kind;
  void row(int64_t r, float* dst, int64_t n_cols) const {
    uint64_t s = seed ^ (static_cast<uint64_t>(r) * 0xd1b54a32d192ed03ull);
    for (int64_t i = 0; i < n_cols; i += 2) {
      double u1 = (static_cast<double>(splitmix(s) >> 11) + 0.5) * 0x1.0p-53;
      double u2 = static_cast<double>(splitmix(s) >> 11) * 0x1.0p-53;
      double m = std::sqrt(-2.0 * std::log(u1));
      float a = static_cast<float>(m * std::cos(2 * M_PI * u2)), b = static_cast<float>(m * std::sin(2 * M_PI * u2));
      dst[i] = a * scale;
      if (i + 1 < n_cols) dst[i + 1] = b * scale;
    }
    if (kind == init::ones_jitter)
      for (int64_t i = 0; i < n_cols; ++i) dst[i] += 1.f;
  }
};

// A tensor to write: name (GGUF), HF name, ggml-order shape {cols, rows}, values.
struct planned {
  std::string name;
  int64_t n_cols = 0, n_rows = 1;
  bool is_matrix = false;
  value_source values;
  int permute_heads = 0;    // GGUF llama Q/K: heads of the row permutation (0 = none)
  int64_t n_experts = 0;    // > 0: a 3-D expert stack {cols, rows / n_experts, n_experts}
  bool keep_f32 = false;    // a matrix never quantized (the MoE router, as llama.cpp's quantizer keeps it)
  std::vector<float> fixed; // explicit values (rope_freqs), overrides `values`
};

// qwen35's layers (llama.cpp's tensor names): gated DeltaNet layers, each full_attn_interval-th
// a gated attention layer (attn_q {C, 2 H D}: per head D q rows then D gate rows), then
// post_attention_norm and the SwiGLU FFN. ssm_a = -exp(A_log) is fixed in -0.1..-0.4 (decays
// of 0.7-0.95 a token: the state carries over many tokens); the conv kernel stays f32.
template <class Add>
void plan_hybrid_layers(const test_model_spec& sp, Add& add, std::vector<planned>& out) {
  const auto& c = sp.config;
  const int64_t C = c.n_embd, QD = int64_t{c.n_head} * c.head_dim, KD = int64_t{c.n_head_kv} * c.head_dim, F = c.n_ff;
  const int64_t S = c.ssm_state, Hv = c.ssm_v_heads, Cc = c.ssm_conv_channels(), VD = Hv * S;
  auto proj = [](int64_t k) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(k))); };
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
    if (c.is_recurrent_layer(l)) {
      add(p + "attn_qkv.weight", C, Cc, true, proj(C), init::normal);
      add(p + "attn_gate.weight", C, VD, true, proj(C), init::normal);
      add(p + "ssm_conv1d.weight", c.ssm_conv_kernel, Cc, true, proj(c.ssm_conv_kernel), init::normal);
      out.back().keep_f32 = true;
      add(p + "ssm_dt.bias", Hv, 1, false, 0.5f, init::normal);
      planned a;
      a.name = p + "ssm_a";
      a.n_cols = Hv;
      for (int64_t h = 0; h < Hv; ++h) a.fixed.push_back(-0.1f * static_cast<float>(1 + h % 4));
      out.push_back(std::move(a));
      if (c.arch == "qwen3next") {  // beta and alpha in one tensor, per key head [beta r; alpha r]
        add(p + "ssm_ba.weight", C, 2 * Hv, true, proj(C), init::normal);
      } else {
        add(p + "ssm_beta.weight", C, Hv, true, proj(C), init::normal);
        add(p + "ssm_alpha.weight", C, Hv, true, proj(C), init::normal);
      }
      add(p + "ssm_norm.weight", S, 1, false, 0.05f, init::ones_jitter);
      add(p + "ssm_out.weight", VD, C, true, proj(VD), init::normal);
    } else {
      add(p + "attn_q.weight", C, 2 * QD, true, proj(C), init::normal);
      add(p + "attn_k.weight", C, KD, true, proj(C), init::normal);
      add(p + "attn_v.weight", C, KD, true, proj(C), init::normal);
      add(p + "attn_q_norm.weight", c.head_dim, 1, false, 0.05f, init::ones_jitter);
      add(p + "attn_k_norm.weight", c.head_dim, 1, false, 0.05f, init::ones_jitter);
      add(p + "attn_output.weight", QD, C, true, proj(QD), init::normal);
    }
    add(p + "post_attention_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
    if (c.is_moe()) {  // qwen35moe / qwen3next: routed experts (router of std 8, as qwen3moe's) + shared expert
      const int64_t E = c.n_expert, Fe = c.n_ff_exp, Fs = c.n_ff_shexp;
      add(p + "ffn_gate_inp.weight", C, E, true, 8.f * proj(C), init::normal);
      out.back().keep_f32 = true;
      for (const char* n : {"ffn_gate_exps.weight", "ffn_up_exps.weight"}) {
        add(p + n, C, Fe * E, true, proj(C), init::normal);
        out.back().n_experts = E;
      }
      add(p + "ffn_down_exps.weight", Fe, C * E, true, proj(Fe), init::normal);
      out.back().n_experts = E;
      add(p + "ffn_gate_inp_shexp.weight", C, 1, false, 2.f * proj(C), init::normal);  // gate logits of std 2
      add(p + "ffn_gate_shexp.weight", C, Fs, true, proj(C), init::normal);
      add(p + "ffn_up_shexp.weight", C, Fs, true, proj(C), init::normal);
      add(p + "ffn_down_shexp.weight", Fs, C, true, proj(Fs), init::normal);
      continue;
    }
    add(p + "ffn_gate.weight", C, F, true, proj(C), init::normal);
    add(p + "ffn_up.weight", C, F, true, proj(C), init::normal);
    add(p + "ffn_down.weight", F, C, true, proj(F), init::normal);
  }
}

// gemma4's MoE block (26B-A4B; llama.cpp's names), beside the dense FFN: the router (f32)
// reads rms_norm(x) * ffn_gate_inp.scale / sqrt(C), a vector of unit length, so router weights
// of std 8 give logits of std 8 (decisive, as qwen3moe's); the experts' gate and up fused in
// one ffn_gate_up_exps {C, 2Fe, E} (as the published GGUFs have it), a fixed per-expert output
// scale 0.6 .. 1.65 (ffn_down_exps.scale), and the branches' norms.
template <class Add>
void plan_gemma4_experts(const model_config& c, const std::string& p, Add& add, std::vector<planned>& out) {
  const int64_t C = c.n_embd, E = c.n_expert, Fe = c.n_ff_exp;
  auto proj = [](int64_t k) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(k))); };
  add(p + "ffn_gate_inp.weight", C, E, true, 8.f, init::normal);
  out.back().keep_f32 = true;
  add(p + "ffn_gate_inp.scale", C, 1, false, 0.05f, init::ones_jitter);
  add(p + "ffn_gate_up_exps.weight", C, 2 * Fe * E, true, proj(C), init::normal);
  out.back().n_experts = E;
  add(p + "ffn_down_exps.weight", Fe, C * E, true, proj(Fe), init::normal);
  out.back().n_experts = E;
  planned s;
  s.name = p + "ffn_down_exps.scale";
  s.n_cols = E;
  for (int64_t e = 0; e < E; ++e) s.fixed.push_back(0.6f + 0.15f * static_cast<float>((3 * e) % 8));
  out.push_back(std::move(s));
  for (const char* n : {"pre_ffw_norm_2.weight", "post_ffw_norm_1.weight", "post_ffw_norm_2.weight"})
    add(p + n, C, 1, false, 0.05f, init::ones_jitter);
}

// gemma4's layers (llama.cpp's tensor names): the KV-shared layers carry q only, a global
// layer that owns its KV and is not the first has no attn_v (V = K's projection), every
// layer its per-layer embedding block and a fixed output scale (0.6 .. 1.1).
template <class Add>
void plan_gemma4_layers(const test_model_spec& sp, Add& add, std::vector<planned>& out) {
  const auto& c = sp.config;
  const int64_t C = c.n_embd, P = c.n_embd_per_layer;
  auto proj = [](int64_t k) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(k))); };
  bool first_global = true;
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    // The layer's own head shape (sliding and global layers may differ).
    const int64_t D = c.layer_head_dim(l), QD = c.layer_q_width(l), KD = c.layer_kv_width(l), F = c.layer_n_ff(l);
    const bool owns = c.kv_source_layer(l) == l, swa = c.is_swa_layer(l);
    add(p + "attn_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
    add(p + "attn_q.weight", C, QD, true, proj(C), init::normal);
    if (owns) {
      add(p + "attn_k.weight", C, KD, true, proj(C), init::normal);
      if (swa || first_global) add(p + "attn_v.weight", C, KD, true, proj(C), init::normal);
      if (!swa) first_global = false;
    }
    // Attention scale is 1 (the q/k norms set the scores' size): q norm weights near
    // 1/sqrt(D) keep the scores O(1), as a trained model's are; with unit weights they have
    // std sqrt(D) and near-one-hot attention that llama.cpp's f16 rounding of q and K moves.
    planned qn;
    qn.name = p + "attn_q_norm.weight";
    qn.n_cols = D;
    for (int64_t i = 0; i < D; ++i)
      qn.fixed.push_back(static_cast<float>((1.0 + 0.05 * std::sin(static_cast<double>(7 * l + i))) / std::sqrt(static_cast<double>(D))));
    out.push_back(std::move(qn));
    if (owns) add(p + "attn_k_norm.weight", D, 1, false, 0.05f, init::ones_jitter);
    add(p + "attn_output.weight", QD, C, true, proj(QD), init::normal);
    add(p + "post_attention_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
    add(p + "ffn_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
    add(p + "ffn_gate.weight", C, F, true, proj(C), init::normal);
    add(p + "ffn_up.weight", C, F, true, proj(C), init::normal);
    add(p + "ffn_down.weight", F, C, true, proj(F), init::normal);
    add(p + "post_ffw_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
    if (c.is_moe()) plan_gemma4_experts(c, p, add, out);
    if (P > 0) {
      add(p + "inp_gate.weight", C, P, true, proj(C), init::normal);
      add(p + "proj.weight", P, C, true, proj(P), init::normal);
      add(p + "post_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
    }
    planned s;
    s.name = p + "layer_output_scale.weight";
    s.n_cols = 1;
    s.fixed = {0.6f + 0.1f * static_cast<float>(l % 6)};
    out.push_back(std::move(s));
  }
}

std::vector<planned> plan(const test_model_spec& sp) {
  const auto& c = sp.config;
  const int64_t C = c.n_embd, QD = int64_t{c.n_head} * c.head_dim, KD = int64_t{c.n_head_kv} * c.head_dim, F = c.n_ff;
  std::vector<planned> out;
  auto add = [&](std::string name, int64_t cols, int64_t rows, bool matrix, float scale, init kind, int perm = 0) {
    uint64_t seed = sp.seed * 0x9e3779b97f4a7c15ull ^ fnv1a(name);
    out.push_back({std::move(name), cols, rows, matrix, {seed, scale, kind}, perm, {}});
  };
  auto proj = [](int64_t k) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(k))); };
  add("token_embd.weight", C, c.n_vocab, true, proj(C), init::normal);
  add("output_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
  if (!c.tied_embeddings) add("output.weight", C, c.n_vocab, true, proj(C), init::normal);
  if (c.rope_llama3.enabled) {
    planned p;
    p.name = "rope_freqs.weight";
    p.n_cols = c.rope.n_dims / 2;
    p.fixed = llama3_freq_factors(c);
    out.push_back(std::move(p));
  }
  if (c.longrope) {  // LongRoPE divisors rising over the pairs: long 1..16, short 1..2
    for (const auto& [name, top] : {std::pair{"rope_factors_long.weight", 16.0}, std::pair{"rope_factors_short.weight", 2.0}}) {
      planned p;
      p.name = name;
      p.n_cols = c.rope.n_dims / 2;
      for (int64_t i = 0; i < p.n_cols; ++i)
        p.fixed.push_back(static_cast<float>(std::pow(top, static_cast<double>(i) / static_cast<double>(p.n_cols - 1))));
      out.push_back(std::move(p));
    }
  }
  const bool permute = c.rope.mode == gpu::rope_mode::normal;  // llama.cpp's converters permute these
  if (c.arch == "gemma4") {
    // Proportional rope of the global layers: a quarter of the pairs rotate, the others
    // divide by 1e30 (as llama.cpp's converter writes rope_freqs).
    planned f;
    f.name = "rope_freqs.weight";
    f.n_cols = c.rope.n_dims / 2;
    for (int64_t i = 0; i < f.n_cols; ++i) f.fixed.push_back(i < f.n_cols / 4 ? 1.f : 1e30f);
    out.push_back(std::move(f));
    if (c.n_embd_per_layer > 0) {
      const int64_t LP = int64_t{c.n_layer} * c.n_embd_per_layer;
      add("per_layer_token_embd.weight", LP, c.n_vocab, true, proj(c.n_embd_per_layer), init::normal);
      add("per_layer_model_proj.weight", C, LP, true, proj(C), init::normal);
      add("per_layer_proj_norm.weight", c.n_embd_per_layer, 1, false, 0.05f, init::ones_jitter);
    }
    plan_gemma4_layers(sp, add, out);
    return out;
  }
  if (c.is_hybrid()) {
    plan_hybrid_layers(sp, add, out);
    return out;
  }
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
    if (c.fused_qkv) {  // neox rope only: no permutation
      add(p + "attn_qkv.weight", C, QD + 2 * KD, true, proj(C), init::normal);
    } else {
      add(p + "attn_q.weight", C, QD, true, proj(C), init::normal, permute ? c.n_head : 0);
      add(p + "attn_k.weight", C, KD, true, proj(C), init::normal, permute ? c.n_head_kv : 0);
      add(p + "attn_v.weight", C, KD, true, proj(C), init::normal);
    }
    if (c.qkv_bias) {
      add(p + "attn_q.bias", QD, 1, false, 0.1f, init::normal, permute ? c.n_head : 0);
      add(p + "attn_k.bias", KD, 1, false, 0.1f, init::normal, permute ? c.n_head_kv : 0);
      add(p + "attn_v.bias", KD, 1, false, 0.1f, init::normal);
    }
    if (c.qk_norm) {
      add(p + "attn_q_norm.weight", c.head_dim, 1, false, 0.05f, init::ones_jitter);
      add(p + "attn_k_norm.weight", c.head_dim, 1, false, 0.05f, init::ones_jitter);
    }
    add(p + "attn_output.weight", QD, C, true, proj(QD), init::normal);
    if (c.attn_out_bias) add(p + "attn_output.bias", C, 1, false, 0.1f, init::normal);
    if (c.attn_sinks) add(p + "attn_sinks.weight", c.n_head, 1, false, 1.f, init::normal);  // O(1), as the scores
    // gpt-oss names its FFN norm post_attention_norm.
    add(p + (c.arch == "gpt-oss" ? "post_attention_norm.weight" : "ffn_norm.weight"), C, 1, false, 0.05f, init::ones_jitter);
    if (c.post_norms) {
      add(p + "post_attention_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
      add(p + "post_ffw_norm.weight", C, 1, false, 0.05f, init::ones_jitter);
    }
    if (c.is_moe()) {  // router (f32) and the expert stacks {C, Fe, E}, {Fe, C, E}
      const int64_t E = c.n_expert, Fe = c.n_ff_exp;
      // Router logits of std 8: decisive choices, as trained routers make them. With unit
      // logits the top-2 has near ties that llama.cpp's q8 activations flip (a different
      // expert, a different token), which no tolerance on the logprobs would cover.
      add(p + "ffn_gate_inp.weight", C, E, true, 8.f * proj(C), init::normal);
      out.back().keep_f32 = true;
      add(p + "ffn_gate_exps.weight", C, Fe * E, true, proj(C), init::normal);
      out.back().n_experts = E;
      add(p + "ffn_up_exps.weight", C, Fe * E, true, proj(C), init::normal);
      out.back().n_experts = E;
      add(p + "ffn_down_exps.weight", Fe, C * E, true, proj(Fe), init::normal);
      out.back().n_experts = E;
      if (c.expert_bias) {  // gpt-oss: router bias {E}, per-expert biases {Fe, E} / {C, E} (2-D, f32)
        add(p + "ffn_gate_inp.bias", E, 1, false, 0.1f, init::normal);
        for (const char* b : {"ffn_gate_exps.bias", "ffn_up_exps.bias", "ffn_down_exps.bias"}) {
          add(p + b, std::string_view(b) == "ffn_down_exps.bias" ? C : Fe, E, true, 0.5f, init::normal);
          out.back().keep_f32 = true;
        }
      }
      continue;
    }
    if (c.fused_gate_up) {
      add(p + "ffn_up.weight", C, 2 * F, true, proj(C), init::normal);
    } else {
      add(p + "ffn_gate.weight", C, F, true, proj(C), init::normal);
      add(p + "ffn_up.weight", C, F, true, proj(C), init::normal);
    }
    add(p + "ffn_down.weight", F, C, true, proj(F), init::normal);
  }
  return out;
}

// Values of row r in the file's layout. GGUF llama Q/K (permute_heads > 0): file row
// h*D + 2i + j holds HF row h*D + j*D/2 + i. A 1-D tensor is one row; its permutation acts
// on elements the same way.
void file_row(const planned& t, bool gguf_layout, int64_t r, float* dst) {
  if (!t.fixed.empty()) { std::copy(t.fixed.begin(), t.fixed.end(), dst); return; }
  if (!gguf_layout || t.permute_heads == 0) { t.values.row(r, dst, t.n_cols); return; }
  if (t.is_matrix) {
    const int64_t D = t.n_rows / t.permute_heads, h = r / D, i = (r % D) / 2, j = r % 2;
    t.values.row(h * D + j * (D / 2) + i, dst, t.n_cols);
    return;
  }
  std::vector<float> hf(static_cast<size_t>(t.n_cols));
  t.values.row(0, hf.data(), t.n_cols);
  const int64_t D = t.n_cols / t.permute_heads;
  for (int64_t e = 0; e < t.n_cols; ++e) {
    const int64_t h = e / D, i = (e % D) / 2, j = e % 2;
    dst[e] = hf[static_cast<size_t>(h * D + j * (D / 2) + i)];
  }
}

// One HF tensor of a qwen35 / qwen35moe / qwen3next layer built from the planned (GGUF-layout)
// tensors: the inverse of model/hf_hybrid.cpp's conversions (norms less one, A_log =
// log(-ssm_a), conv kernel {Cc, 1, K}, Qwen3.5's value heads back to grouped-by-key-head
// order, Qwen3-Next's attn_qkv + attn_gate as in_proj_qkvz: per key head [q, k, v r, z r]).
struct hf_rows {
  std::string name;               // the HF name
  std::vector<uint64_t> shape;    // HF order
  int64_t n_rows = 1, n_cols = 0;
  std::function<void(int64_t, float*)> row;
  bool skip = false;              // written as part of another tensor
};

// Qwen3.5 MoE's fused expert stacks (no .weight suffix): gate_up_proj [E, 2 Fe, C] from
// ffn_gate_exps + ffn_up_exps (the latter then skipped), down_proj [E, C, Fe].
void fused_experts_hf(const model_config& c, const std::vector<planned>& all, const planned& t, const std::string& layer,
                      const std::string& s, hf_rows& h) {
  const planned* tp = &t;
  const int64_t E = c.n_expert, Fe = c.n_ff_exp;
  const std::string base = "model.layers." + layer + ".mlp.experts.";
  if (s == "ffn_up_exps.weight") {
    h.skip = true;
  } else if (s == "ffn_down_exps.weight") {
    h.name = base + "down_proj";
    h.shape = {static_cast<uint64_t>(E), static_cast<uint64_t>(t.n_rows / E), static_cast<uint64_t>(t.n_cols)};
    h.row = [=](int64_t R, float* dst) { file_row(*tp, false, R, dst); };
  } else {
    const std::string up_name = "blk." + layer + ".ffn_up_exps.weight";
    const planned* up = nullptr;
    for (auto& x : all)
      if (x.name == up_name) up = &x;
    h.name = base + "gate_up_proj";
    h.n_rows = 2 * Fe * E;
    h.shape = {static_cast<uint64_t>(E), static_cast<uint64_t>(2 * Fe), static_cast<uint64_t>(t.n_cols)};
    h.row = [=](int64_t R, float* dst) {
      const int64_t e = R / (2 * Fe), o = R % (2 * Fe);
      file_row(o < Fe ? *tp : *up, false, e * Fe + o % Fe, dst);
    };
  }
}

// Qwen3-Next's in_proj_qkvz: per key head [q S, k S, v r S, z r S] rows of attn_qkv + attn_gate.
void qkvz_hf(const model_config& c, const std::vector<planned>& all, const planned& t, const std::string& layer, hf_rows& h) {
  const planned* tp = &t;
  const int64_t S = c.ssm_state, Hk = c.ssm_k_heads, r = c.ssm_v_heads / Hk, QK = 2 * Hk * S;
  const std::string gate_name = "blk." + layer + ".attn_gate.weight";
  const planned* gp = nullptr;
  for (auto& x : all)
    if (x.name == gate_name) gp = &x;
  const int64_t per = 2 * S + 2 * r * S;
  h.name = "model.layers." + layer + ".linear_attn.in_proj_qkvz.weight";
  h.n_rows = Hk * per;
  h.shape = {static_cast<uint64_t>(h.n_rows), static_cast<uint64_t>(t.n_cols)};
  h.row = [=](int64_t R, float* dst) {
    const int64_t g = R / per, o = R % per;
    if (o < S) file_row(*tp, false, g * S + o, dst);
    else if (o < 2 * S) file_row(*tp, false, Hk * S + g * S + (o - S), dst);
    else if (o < 2 * S + r * S) file_row(*tp, false, QK + g * r * S + (o - 2 * S), dst);
    else file_row(*gp, false, g * r * S + (o - 2 * S - r * S), dst);
  };
}

std::optional<hf_rows> hybrid_hf(const model_config& c, const std::vector<planned>& all, const planned& t) {
  if (c.arch != "qwen35" && c.arch != "qwen35moe" && c.arch != "qwen3next") return std::nullopt;
  const auto dot = t.name.starts_with("blk.") ? t.name.find('.', 4) : std::string::npos;
  const std::string s = dot == std::string::npos ? t.name : t.name.substr(dot + 1);
  const std::string layer = dot == std::string::npos ? "" : t.name.substr(4, dot - 4);
  const bool tile = c.arch != "qwen3next";
  const int64_t S = c.ssm_state, Hk = c.ssm_k_heads, Hv = c.ssm_v_heads, r = Hv / Hk, QK = 2 * Hk * S;
  auto tiled = [=](int64_t q) { return tile ? (q % r) * Hk + q / r : q; };  // GGUF head of HF (grouped) head q
  const planned* tp = &t;
  hf_rows h;
  h.name = hf_tensor_name(t.name, &c);
  h.n_rows = t.n_rows;
  h.n_cols = t.n_cols;
  h.shape = t.is_matrix ? std::vector<uint64_t>{static_cast<uint64_t>(t.n_rows), static_cast<uint64_t>(t.n_cols)}
                        : std::vector<uint64_t>{static_cast<uint64_t>(t.n_cols)};
  auto by_rows = [&](int64_t fixed, int64_t head) {
    h.row = [=](int64_t R, float* dst) {
      const int64_t src = R < fixed ? R : fixed + tiled((R - fixed) / head) * head + (R - fixed) % head;
      file_row(*tp, false, src, dst);
    };
  };
  auto by_elems = [&](int64_t head, float (*f)(float)) {
    h.row = [=](int64_t, float* dst) {
      std::vector<float> g(static_cast<size_t>(tp->n_cols));
      file_row(*tp, false, 0, g.data());
      for (int64_t e = 0; e < tp->n_cols; ++e)
        dst[e] = f(g[static_cast<size_t>(tiled(e / head) * head + e % head)]);
    };
  };
  if (s.ends_with("norm.weight") && s != "ssm_norm.weight") {
    h.row = [=](int64_t, float* dst) {
      file_row(*tp, false, 0, dst);
      for (int64_t e = 0; e < tp->n_cols; ++e) dst[e] -= 1.f;
    };
  } else if (c.arch == "qwen35moe" && (s == "ffn_up_exps.weight" || s == "ffn_gate_exps.weight" || s == "ffn_down_exps.weight")) {
    fused_experts_hf(c, all, t, layer, s, h);
  } else if (s == "ffn_gate_inp_shexp.weight") {  // nn.Linear(C, 1): [1, C]
    h.shape = {1, static_cast<uint64_t>(t.n_cols)};
    h.row = [=](int64_t, float* dst) { file_row(*tp, false, 0, dst); };
  } else if (s == "ssm_a") {
    by_elems(1, [](float x) { return std::log(-x); });
  } else if (s == "ssm_dt.bias") {
    by_elems(1, [](float x) { return x; });
  } else if (s == "ssm_out.weight") {
    h.row = [=](int64_t R, float* dst) {
      std::vector<float> g(static_cast<size_t>(tp->n_cols));
      file_row(*tp, false, R, g.data());
      for (int64_t e = 0; e < tp->n_cols; ++e) dst[e] = g[static_cast<size_t>(tiled(e / S) * S + e % S)];
    };
  } else if (s == "ssm_conv1d.weight") {
    h.shape = {static_cast<uint64_t>(t.n_rows), 1, static_cast<uint64_t>(t.n_cols)};
    by_rows(QK, S);
  } else if (tile && (s == "attn_qkv.weight" || s == "attn_gate.weight")) {
    by_rows(s == "attn_qkv.weight" ? QK : 0, S);
  } else if (tile && (s == "ssm_beta.weight" || s == "ssm_alpha.weight")) {
    by_rows(0, 1);
  } else if (!tile && s == "attn_gate.weight") {
    h.skip = true;
  } else if (!tile && s == "attn_qkv.weight") {
    qkvz_hf(c, all, t, layer, h);
  } else {
    return std::nullopt;
  }
  return h;
}

std::vector<std::string> synthetic_vocab(int n) {
  std::vector<std::string> v = {"<unk>", "<s>", "</s>"};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.emplace_back(buf);
  }
  const std::string sp = "\xe2\x96\x81";  // U+2581, SentencePiece's space
  const std::string letters = "etaoinshrdlucmfwypvbgkjqxzETAOINSHRDLUCMFWYPVBGKJQXZ.,!?'\"-0123456789";
  v.push_back(sp);
  for (char ch : letters) v.emplace_back(1, ch);
  for (char ch : letters) v.push_back(sp + ch);
  for (size_t a = 0; a < letters.size() && static_cast<int>(v.size()) < n; ++a)
    for (size_t b = 0; b < 26 && static_cast<int>(v.size()) < n; ++b) {
      v.push_back(sp + letters[a] + letters[b]);
      if (static_cast<int>(v.size()) < n) v.push_back(std::string(1, letters[a]) + letters[b]);
    }
  for (int i = static_cast<int>(v.size()); i < n; ++i) v.push_back("<unused" + std::to_string(i) + ">");
  v.resize(static_cast<size_t>(n));
  return v;
}

void add_synthetic_tokenizer(gguf_writer& w, int n_vocab) {
  auto toks = synthetic_vocab(n_vocab);
  std::vector<float> scores(toks.size());
  std::vector<int32_t> types(toks.size(), 1);
  for (size_t i = 0; i < toks.size(); ++i) scores[i] = -static_cast<float>(i);
  types[0] = 2;
  types[1] = types[2] = 3;
  for (size_t i = 3; i < 259 && i < toks.size(); ++i) types[i] = 6;
  for (size_t i = 0; i < toks.size(); ++i)
    if (toks[i].rfind("<unused", 0) == 0) types[i] = 5;
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string("tokenizer.ggml.pre", "default");
  w.add_strings("tokenizer.ggml.tokens", toks);
  w.add_f32s("tokenizer.ggml.scores", scores);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_bool("tokenizer.ggml.add_eos_token", false);
}

void add_hparams(gguf_writer& w, const test_model_spec& sp) {
  const auto& c = sp.config;
  const std::string a = c.arch + ".";
  w.add_string("general.architecture", c.arch);
  w.add_string("general.name", "vkserve-test-" + sp.shape_name + "-" +
                                   (sp.preset.empty() ? std::string(gpu::traits(sp.weight_type).name) : sp.preset));
  w.add_u32(a + "block_count", static_cast<uint32_t>(c.n_layer));
  w.add_u32(a + "context_length", static_cast<uint32_t>(c.n_ctx));
  w.add_u32(a + "embedding_length", static_cast<uint32_t>(c.n_embd));
  if (c.n_ff_layer.empty()) w.add_u32(a + "feed_forward_length", static_cast<uint32_t>(c.n_ff));
  else w.add_i32s(a + "feed_forward_length", std::vector<int32_t>(c.n_ff_layer.begin(), c.n_ff_layer.end()));  // gemma4 E2B/E4B
  w.add_u32(a + "attention.head_count", static_cast<uint32_t>(c.n_head));
  if (c.n_head_kv_layer.empty()) {
    w.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
  } else {  // per layer, as llama.cpp's gemma4 converter writes it
    w.add_i32s(a + "attention.head_count_kv", std::vector<int32_t>(c.n_head_kv_layer.begin(), c.n_head_kv_layer.end()));
  }
  if (c.head_dim * c.n_head != c.n_embd) {
    w.add_u32(a + "attention.key_length", static_cast<uint32_t>(c.head_dim));
    w.add_u32(a + "attention.value_length", static_cast<uint32_t>(c.head_dim));
  }
  w.add_f32(a + "attention.layer_norm_rms_epsilon", c.rms_eps);
  w.add_f32(a + "rope.freq_base", c.rope.freq_base);
  w.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(c.rope.n_dims));
  w.add_u32(a + "vocab_size", static_cast<uint32_t>(c.n_vocab));
  if (c.sliding_window > 0) w.add_u32(a + "attention.sliding_window", static_cast<uint32_t>(c.sliding_window));
  if (c.is_moe()) {
    w.add_u32(a + "expert_count", static_cast<uint32_t>(c.n_expert));
    w.add_u32(a + "expert_used_count", static_cast<uint32_t>(c.n_expert_used));
    w.add_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(c.n_ff_exp));
    if (c.n_ff_shexp > 0) w.add_u32(a + "expert_shared_feed_forward_length", static_cast<uint32_t>(c.n_ff_shexp));
  }
  if (c.is_hybrid()) {  // qwen35 (llama.cpp's keys); text positions fill every imrope section
    w.add_u32(a + "ssm.conv_kernel", static_cast<uint32_t>(c.ssm_conv_kernel));
    w.add_u32(a + "ssm.state_size", static_cast<uint32_t>(c.ssm_state));
    w.add_u32(a + "ssm.group_count", static_cast<uint32_t>(c.ssm_k_heads));
    w.add_u32(a + "ssm.time_step_rank", static_cast<uint32_t>(c.ssm_v_heads));
    w.add_u32(a + "ssm.inner_size", static_cast<uint32_t>(c.ssm_v_heads * c.ssm_state));
    w.add_u32(a + "full_attention_interval", static_cast<uint32_t>(c.full_attn_interval));
    const int32_t pairs = c.rope.n_dims / 2, third = pairs / 3;
    if (c.arch != "qwen3next") w.add_i32s(a + "rope.dimension_sections", {pairs - 2 * third, third, third, 0});  // imrope
  }
  if (c.arch == "gemma4") {  // llama.cpp's gemma4 keys (the sliding layers as a bool array)
    gguf::array pat;
    pat.elem = gguf::value_type::boolean;
    for (int l = 0; l < c.n_layer; ++l) pat.items.emplace_back(c.is_swa_layer(l));
    w.add_value(a + "attention.sliding_window_pattern", pat);
    w.add_f32(a + "rope.freq_base_swa", c.rope_freq_base_swa);
    w.add_u32(a + "rope.dimension_count_swa", static_cast<uint32_t>(c.rope_n_dims_swa));
    const auto dswa = static_cast<uint32_t>(c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim);
    w.add_u32(a + "attention.key_length_swa", dswa);
    w.add_u32(a + "attention.value_length_swa", dswa);
    w.add_f32(a + "final_logit_softcapping", c.final_softcap);
    w.add_u32(a + "attention.shared_kv_layers", static_cast<uint32_t>(c.n_kv_shared));
    w.add_u32(a + "embedding_length_per_layer_input", static_cast<uint32_t>(c.n_embd_per_layer));
  }
  if (c.arch == "gemma2") {
    w.add_f32(a + "attn_logit_softcapping", c.attn_softcap);
    w.add_f32(a + "final_logit_softcapping", c.final_softcap);
  }
  const auto& rs = c.rope_scaling;
  if (rs.type == "linear" || rs.type == "yarn") {
    w.add_string(a + "rope.scaling.type", rs.type);
    w.add_f32(a + "rope.scaling.factor", rs.factor);
    if ((rs.type == "yarn" || c.longrope) && rs.original_context > 0)
      w.add_u32(a + "rope.scaling.original_context_length", static_cast<uint32_t>(rs.original_context));
    if (rs.attn_factor != 1.f) w.add_f32(a + "rope.scaling.attn_factor", rs.attn_factor);
  }
}

model_config base_config(std::string arch, int L, int C, int H, int Hkv, int D, int F, int V, int ctx, float eps,
                         float base, bool tied) {
  model_config c;
  c.arch = std::move(arch);
  c.n_layer = L; c.n_embd = C; c.n_head = H; c.n_head_kv = Hkv; c.head_dim = D; c.n_ff = F; c.n_vocab = V;
  c.n_ctx = ctx; c.rms_eps = eps;
  const bool normal = c.arch == "llama" || c.arch == "smollm3" || c.arch == "mistral3";
  c.rope.mode = normal ? gpu::rope_mode::normal : gpu::rope_mode::neox;
  c.rope.n_dims = D;
  c.rope.freq_base = base;
  c.tied_embeddings = tied;
  c.qkv_bias = c.arch == "qwen2";
  c.qk_norm = c.arch == "qwen3" || c.arch == "qwen3moe";
  if (c.arch == "qwen3moe") {  // 8 experts of width F / 2, 2 per token (as config_from_gguf reads them back)
    c.n_expert = 8;
    c.n_expert_used = 2;
    c.n_ff_exp = F / 2;
    c.expert_norm = true;
  }
  if (c.arch == "gpt-oss") {  // 8 experts of width F / 2, 4 per token, window 8 on layers 0, 2, ...
    c.n_expert = 8;
    c.n_expert_used = 4;
    c.n_ff_exp = F / 2;
    c.expert_gating = gpu::moe_gating::softmax_selected;
    c.qkv_bias = c.attn_sinks = c.attn_out_bias = c.expert_bias = c.swiglu_oai = true;
    c.sliding_window = 8;
    c.swa_pattern = 2;
  }
  if (c.arch == "qwen35moe" || c.arch == "qwen3next") {  // 8 experts of F / 2, 2 per token, a shared expert of F / 2
    c.n_expert = 8;
    c.n_expert_used = 2;
    c.n_ff_exp = F / 2;
    c.n_ff_shexp = F / 2;
    c.expert_norm = true;
  }
  if (c.arch == "qwen35" || c.arch == "qwen35moe" || c.arch == "qwen3next") {  // as config_from_gguf reads them back: 2 key / 4 value heads of 64, conv 4
    c.qk_norm = true;
    c.full_attn_interval = 4;
    c.ssm_conv_kernel = 4;
    c.ssm_state = 64;
    c.ssm_k_heads = 2;
    c.ssm_v_heads = 4;
    c.rope.n_dims = D / 4;  // partial rotary (Qwen3.5: 64 of 256)
  }
  c.fused_qkv = c.fused_gate_up = c.arch == "phi3";
  c.no_rope_layer_step = c.arch == "smollm3" ? 4 : 0;
  if (c.arch == "gemma2" || c.arch == "gemma3") {  // as config_from_gguf reads them back
    const bool g2 = c.arch == "gemma2";
    c.embd_scale = std::sqrt(static_cast<float>(C));
    c.post_norms = c.gelu_ffn = true;
    c.qk_norm = !g2;
    c.swa_pattern = g2 ? 2 : 6;
    c.rope_freq_base_swa = g2 ? 0.f : 10000.f;
    c.attn_scale = 1.f / std::sqrt(static_cast<float>(D));
  }
  if (c.arch == "gemma4") {  // as config_from_gguf reads them back
    c.embd_scale = std::sqrt(static_cast<float>(C));
    c.post_norms = c.gelu_ffn = c.qk_norm = c.v_norm = true;
    c.attn_scale = 1.f;
    c.rope_freq_base_swa = 10000.f;
    c.rope_n_dims_swa = D;
    c.final_softcap = 30.f;
  }
  c.bos_id = 1;
  c.eos_id = 2;
  return c;
}

}  // namespace

std::vector<std::string> test_model_shape_names() {
  return {"smollm2-135m", "qwen2.5-0.5b", "qwen3-0.6b", "llama3.2-1b", "llama3.1-8b",
          "tiny-llama",   "tiny-llama3",  "tiny-qwen2", "tiny-qwen3", "tiny-llama-yarn",
          "tiny-phi3",    "tiny-smollm3", "tiny-mistral3", "tiny-gemma2", "tiny-gemma3",
          "tiny-gemma4", "tiny-gemma4-wide", "tiny-gemma4-512", "tiny-gemma4-e2b", "tiny-gemma4moe", "tiny-phi3-longrope", "tiny-phi3-longrope-short", "tiny-qwen3moe", "qwen3moe-small", "tiny-gpt-oss", "tiny-qwen35",
          "qwen35-small", "tiny-qwen35moe", "tiny-qwen3next"};
}

result<test_model_spec> test_model_shape(std::string_view name) {
  test_model_spec s;
  s.shape_name = std::string(name);
  auto& c = s.config;
  if (name == "smollm2-135m") c = base_config("llama", 30, 576, 9, 3, 64, 1536, 49152, 8192, 1e-5f, 1e5f, true);
  else if (name == "qwen2.5-0.5b") c = base_config("qwen2", 24, 896, 14, 2, 64, 4864, 151936, 32768, 1e-6f, 1e6f, true);
  else if (name == "qwen3-0.6b") c = base_config("qwen3", 28, 1024, 16, 8, 128, 3072, 151936, 40960, 1e-6f, 1e6f, true);
  else if (name == "llama3.2-1b" || name == "llama3.1-8b") {
    bool big = name == "llama3.1-8b";
    c = big ? base_config("llama", 32, 4096, 32, 8, 128, 14336, 128256, 131072, 1e-5f, 5e5f, false)
            : base_config("llama", 16, 2048, 32, 8, 64, 8192, 128256, 131072, 1e-5f, 5e5f, true);
    c.rope_llama3 = {true, big ? 8.f : 32.f, 1.f, 4.f, 8192};
  } else if (name == "tiny-llama") c = base_config("llama", 2, 256, 4, 2, 64, 512, 512, 2048, 1e-5f, 10000.f, false);
  else if (name == "tiny-llama3") {
    c = base_config("llama", 2, 256, 4, 2, 64, 512, 512, 2048, 1e-5f, 10000.f, true);
    c.rope_llama3 = {true, 8.f, 1.f, 4.f, 64};
  } else if (name == "tiny-llama-yarn") {
    // YaRN x4 over an original context of 64: the correction range (pairs 0..9 of 32) mixes
    // within a short test sequence.
    c = base_config("llama", 2, 256, 4, 2, 64, 512, 512, 256, 1e-5f, 10000.f, false);
    c.rope_scaling = {"yarn", 4.f, 64, 1.f, 32.f, 1.f};
    if (auto r = apply_rope_scaling(c); !r) return fail(std::move(r).error());
  } else if (name == "tiny-phi3") c = base_config("phi3", 2, 256, 4, 2, 64, 512, 512, 2048, 1e-5f, 10000.f, false);
  else if (name == "tiny-phi3-longrope" || name == "tiny-phi3-longrope-short") {
    // LongRoPE as Phi-3-128k's converter writes it: factor tensors, attn_factor
    // sqrt(1 + ln(n_ctx / orig) / ln(orig)), and the original context: 32 (any test
    // context exceeds it: long factors) or 1024 (none does: short factors).
    const bool lng = name == "tiny-phi3-longrope";
    c = base_config("phi3", 2, 256, 4, 2, 64, 512, 512, 2048, 1e-5f, 10000.f, false);
    c.longrope = true;
    const int orig = lng ? 32 : 1024;
    c.rope_scaling.type = "linear";
    c.rope_scaling.original_context = orig;
    c.rope_scaling.attn_factor = static_cast<float>(std::sqrt(1.0 + std::log(2048.0 / orig) / std::log(static_cast<double>(orig))));
    if (auto r = apply_rope_scaling(c); !r) return fail(std::move(r).error());
  }
  else if (name == "tiny-smollm3") {  // 4 layers: layer 3 has no rope
    c = base_config("smollm3", 4, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 5e6f, true);
  } else if (name == "tiny-mistral3") {  // with YaRN, as Ministral 3 has it
    c = base_config("mistral3", 2, 256, 4, 2, 64, 512, 512, 256, 1e-5f, 1e6f, false);
    c.rope_scaling = {"yarn", 4.f, 64, 1.f, 32.f, 1.f};
    if (auto r = apply_rope_scaling(c); !r) return fail(std::move(r).error());
  } else if (name == "tiny-gemma2") {  // window 8 and caps small enough to matter in a short test
    c = base_config("gemma2", 4, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 10000.f, true);
    c.sliding_window = 8;
    c.attn_softcap = 1.5f;
    c.final_softcap = 5.f;
  } else if (name == "tiny-gemma3") {  // 6 layers: 0-4 local (window 8), 5 global
    c = base_config("gemma3", 6, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 1e6f, true);
    c.sliding_window = 8;
  } else if (name == "tiny-gemma4") {
    // 6 layers: 0-2 and 4 sliding (window 8, rope on 32 of 64 dims), 3 and 5 global
    // (proportional rope: 8 of 32 pairs); layers 4 and 5 reuse 2's and 3's KV; layer 3's V
    // is its K projection; per-layer embeddings of 64; final cap 5.
    c = base_config("gemma4", 6, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 1e6f, true);
    c.sliding_window = 8;
    c.swa_layers = {1, 1, 1, 0, 1, 0};
    c.rope_n_dims_swa = 32;
    c.n_kv_shared = 2;
    c.n_embd_per_layer = 64;
    c.final_softcap = 5.f;
  } else if (name == "tiny-gemma4-wide" || name == "tiny-gemma4-512" || name == "tiny-gemma4-e2b") {
    // tiny-gemma4 with the published checkpoints' two head shapes: global layers (3, 5) with
    // 1 KV head, sliding layers with 2 (head_count_kv per layer); -wide scaled down (global
    // heads of 64, sliding heads of 32 with rope on 16), -512 at the published widths (31B:
    // global heads of 512, sliding ones of 256 rotated whole: the attention kernels at D = 512
    // and 256 in one model); -e2b is -wide with E2B's double-wide MLP: the KV-shared layers'
    // (4, 5) FFN 1024 wide, the others' 512 (feed_forward_length per layer).
    const bool published = name == "tiny-gemma4-512";
    c = base_config("gemma4", 6, 256, 4, 1, published ? 512 : 64, 512, 512, 2048, 1e-6f, 1e6f, true);
    c.sliding_window = 8;
    c.swa_layers = {1, 1, 1, 0, 1, 0};
    c.head_dim_swa = published ? 256 : 32;
    c.n_head_kv_layer = {2, 2, 2, 1, 2, 1};
    c.rope_n_dims_swa = published ? 256 : 16;
    c.n_kv_shared = 2;
    c.n_embd_per_layer = 64;
    c.final_softcap = 5.f;
    if (name == "tiny-gemma4-e2b") c.n_ff_layer = {512, 512, 512, 512, 1024, 1024};
  } else if (name == "tiny-gemma4moe") {
    // 26B-A4B's layer in small: 5 layers, 2 and 4 global (4's V is its K projection), the
    // others sliding (window 8, rope on 32 of 64 dims); every layer a dense FFN of 512 beside
    // 8 experts of 256 (2 per token); no KV sharing, no per-layer embeddings.
    c = base_config("gemma4", 5, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 1e6f, true);
    c.sliding_window = 8;
    c.swa_layers = {1, 1, 0, 1, 0};
    c.rope_n_dims_swa = 32;
    c.n_expert = 8;
    c.n_expert_used = 2;
    c.n_ff_exp = 256;
    c.expert_norm = true;
  } else if (name == "tiny-qwen2") c = base_config("qwen2", 2, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 1e6f, true);
  else if (name == "tiny-qwen3") c = base_config("qwen3", 2, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 1e6f, true);
  else if (name == "tiny-qwen35") c = base_config("qwen35", 4, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 1e7f, true);
  else if (name == "qwen35-small") {  // the agent-loop benchmark's hybrid: 9 DeltaNet + 3 attention layers, C 512
    c = base_config("qwen35", 12, 512, 8, 2, 64, 1536, 32000, 8192, 1e-6f, 1e7f, true);
    c.ssm_k_heads = 4;
    c.ssm_v_heads = 8;
  }
  else if (name == "tiny-qwen35moe") c = base_config("qwen35moe", 4, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 1e7f, true);
  else if (name == "tiny-qwen3next") c = base_config("qwen3next", 4, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 1e7f, true);
  else if (name == "tiny-qwen3moe") c = base_config("qwen3moe", 4, 256, 4, 2, 64, 512, 512, 2048, 1e-6f, 1e6f, true);
  else if (name == "qwen3moe-small") {  // SmolLM2-135M's widths, 8 experts of 256 (2 active): ~134M weights
    c = base_config("qwen3moe", 24, 576, 9, 3, 64, 512, 49152, 8192, 1e-6f, 1e6f, true);
  }
  else if (name == "tiny-gpt-oss") {  // 4 layers (window 8 on 0 and 2), 8 query heads over 2 KV heads, YaRN
    c = base_config("gpt-oss", 4, 256, 8, 2, 64, 512, 512, 256, 1e-5f, 10000.f, false);
    c.rope_scaling = {"yarn", 4.f, 64, 1.f, 32.f, 1.f};
    if (auto r = apply_rope_scaling(c); !r) return fail(std::move(r).error());
  }
  else return fail(errc::not_found, "unknown test model shape '" + std::string(name) + "'");
  return s;
}

gpu::dtype effective_weight_type(gpu::dtype want, int64_t n_cols) {
  if (n_cols % gpu::traits(want).block_elems == 0) return want;
  if (n_cols % 32 == 0) return gpu::dtype::q8_0;
  return gpu::dtype::f16;
}

result<void> write_test_gguf(const test_model_spec& sp_in, const std::string& path) {
  test_model_spec sp = sp_in;
  gguf_writer w;
  if (!sp.vocab_gguf.empty()) {
    auto v = gguf::file::open(sp.vocab_gguf);
    if (!v) return fail(std::move(v).error());
    for (auto& [k, val] : v->metadata())
      if (k.rfind("tokenizer.", 0) == 0 && (sp.chat_template.empty() || k != "tokenizer.chat_template")) w.add_value(k, val);
    if (auto toks = v->get_array("tokenizer.ggml.tokens"))
      sp.config.n_vocab = static_cast<int>(toks->items.size());
  } else {
    add_synthetic_tokenizer(w, sp.config.n_vocab);
  }
  if (!sp.chat_template.empty()) w.add_string("tokenizer.chat_template", sp.chat_template);
  add_hparams(w, sp);
  w.add_u32("general.quantization_version", 2);
  auto tensors = std::make_shared<std::vector<planned>>(plan(sp));
  for (auto& t : *tensors) {
    const gpu::dtype type = !t.is_matrix || t.keep_f32 ? gpu::dtype::f32
                            : t.n_experts > 0 && sp.expert_type ? *sp.expert_type
                            : !sp.preset.empty() ? preset_tensor_type(sp.preset, sp.config, t.name, t.n_cols)
                                                 : effective_weight_type(sp.weight_type, t.n_cols);
    std::vector<uint64_t> dims = {static_cast<uint64_t>(t.n_cols)};
    if (t.is_matrix && t.n_experts > 0) {
      dims.push_back(static_cast<uint64_t>(t.n_rows / t.n_experts));
      dims.push_back(static_cast<uint64_t>(t.n_experts));
    } else if (t.is_matrix) {
      dims.push_back(static_cast<uint64_t>(t.n_rows));
    }
    const planned* tp = &t;
    w.add_tensor(t.name, dims, gpu::traits(type).ggml_id, [tp, type](std::span<std::byte> dst) {
      std::vector<float> row(static_cast<size_t>(tp->n_cols));
      const uint64_t rb = gpu::row_bytes(type, static_cast<uint64_t>(tp->n_cols));
      for (int64_t r = 0; r < tp->n_rows; ++r) {
        file_row(*tp, true, r, row.data());
        std::byte* out = dst.data() + static_cast<uint64_t>(r) * rb;
        if (type == gpu::dtype::f32) std::memcpy(out, row.data(), rb);
        else gpu::quantize_row(type, row.data(), out, tp->n_cols);
      }
    });
  }
  return w.write(path);
}

namespace {

// One row of f32 values in a safetensors dtype (f32, f16 or bf16).
void encode_row(const std::vector<float>& row, gpu::dtype t, std::byte* out) {
  for (size_t k = 0; k < row.size(); ++k) {
    if (t == gpu::dtype::f32) { std::memcpy(out + 4 * k, &row[k], 4); continue; }
    uint16_t h = t == gpu::dtype::f16 ? gpu::f32_to_f16(row[k]) : gpu::f32_to_bf16(row[k]);
    std::memcpy(out + 2 * k, &h, 2);
  }
}

nlohmann::json hf_config(const test_model_spec& sp) {
  const auto& c = sp.config;
  static const std::pair<const char*, const char*> k_names[] = {
      {"llama", "LlamaForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"},
      {"smollm3", "SmolLM3ForCausalLM"}, {"phi3", "Phi3ForCausalLM"}, {"gemma2", "Gemma2ForCausalLM"},
      {"gemma3", "Gemma3ForCausalLM"}, {"qwen3moe", "Qwen3MoeForCausalLM"},
      {"mistral3", "Mistral3ForConditionalGeneration"}, {"gpt-oss", "GptOssForCausalLM"},
      {"qwen35", "Qwen3_5ForCausalLM"},
      {"qwen35moe", "Qwen3_5MoeForConditionalGeneration"}, {"qwen3next", "Qwen3NextForCausalLM"}};
  std::string arch_name;
  for (auto& [a, n] : k_names)
    if (c.arch == a) arch_name = n;
  nlohmann::json j = {
      {"architectures", {arch_name}},          {"model_type", c.arch},
      {"hidden_size", c.n_embd},               {"num_hidden_layers", c.n_layer},
      {"num_attention_heads", c.n_head},       {"num_key_value_heads", c.n_head_kv},
      {"head_dim", c.head_dim},                {"intermediate_size", c.n_ff},
      {"vocab_size", c.n_vocab},               {"max_position_embeddings", c.n_ctx},
      {"rms_norm_eps", c.rms_eps},             {"rope_theta", c.rope.freq_base},
      {"tie_word_embeddings", c.tied_embeddings}, {"bos_token_id", c.bos_id},
      {"eos_token_id", c.eos_id},              {"hidden_act", "silu"},
      {"torch_dtype", sp.weight_type == gpu::dtype::f32 ? "float32"
                      : sp.weight_type == gpu::dtype::f16 ? "float16" : "bfloat16"},
  };
  if (c.post_norms) {  // Gemma 2/3
    j["model_type"] = c.arch == "gemma3" ? "gemma3_text" : "gemma2";
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["query_pre_attn_scalar"] = 1.0 / (static_cast<double>(c.attn_scale) * c.attn_scale);
    j["sliding_window"] = c.sliding_window;
    if (c.arch == "gemma3") {
      j["sliding_window_pattern"] = c.swa_pattern;
      j["rope_local_base_freq"] = c.rope_freq_base_swa;
    }
    j["attn_logit_softcapping"] = c.attn_softcap > 0 ? nlohmann::json(c.attn_softcap) : nlohmann::json(nullptr);
    j["final_logit_softcapping"] = c.final_softcap > 0 ? nlohmann::json(c.final_softcap) : nlohmann::json(nullptr);
  }
  if (c.rope.n_dims != c.head_dim) j["partial_rotary_factor"] = static_cast<double>(c.rope.n_dims) / c.head_dim;
  if (c.no_rope_layer_step > 0) {
    std::vector<int> use_rope;
    for (int l = 0; l < c.n_layer; ++l) use_rope.push_back((l + 1) % c.no_rope_layer_step != 0 ? 1 : 0);
    j["no_rope_layers"] = use_rope;
    j["no_rope_layer_interval"] = c.no_rope_layer_step;
  }
  if (c.rope_llama3.enabled)
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", c.rope_llama3.factor},
                         {"low_freq_factor", c.rope_llama3.low_freq_factor},
                         {"high_freq_factor", c.rope_llama3.high_freq_factor},
                         {"original_max_position_embeddings", c.rope_llama3.original_context}};
  else if (c.rope_scaling.type == "linear" || c.rope_scaling.type == "yarn") {
    j["rope_scaling"] = {{"rope_type", c.rope_scaling.type}, {"factor", c.rope_scaling.factor}};
    if (c.rope_scaling.type == "yarn" && c.rope_scaling.original_context > 0)
      j["rope_scaling"]["original_max_position_embeddings"] = c.rope_scaling.original_context;
  } else
    j["rope_scaling"] = nullptr;
  if (c.arch == "gpt-oss") {  // GptOssConfig: intermediate_size is the expert width
    j["model_type"] = "gpt_oss";
    j["intermediate_size"] = c.n_ff_exp;
    j["num_local_experts"] = c.n_expert;
    j["num_experts_per_tok"] = j["experts_per_token"] = c.n_expert_used;
    j["attention_bias"] = true;
    j["sliding_window"] = c.sliding_window;
    j["swiglu_limit"] = c.swiglu_limit;
    std::vector<std::string> types;
    for (int l = 0; l < c.n_layer; ++l) types.push_back(c.is_swa_layer(l) ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    if (j["rope_scaling"].is_object())
      j["rope_scaling"].update({{"beta_fast", c.rope_scaling.beta_fast}, {"beta_slow", c.rope_scaling.beta_slow}});
    if (sp.expert_type == gpu::dtype::mxfp4)
      j["quantization_config"] = {{"quant_method", "mxfp4"},
                                  {"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                              "model.embed_tokens", "lm_head"}}};
  } else if (c.is_moe()) {
    j["model_type"] = "qwen3_moe";
    j["num_experts"] = c.n_expert;
    j["num_experts_per_tok"] = c.n_expert_used;
    j["moe_intermediate_size"] = c.n_ff_exp;
    j["norm_topk_prob"] = c.expert_norm;
    j["decoder_sparse_step"] = 1;
    j["mlp_only_layers"] = nlohmann::json::array();
  }
  if (c.is_hybrid()) {  // Qwen3.5 / Qwen3-Next (transformers' keys)
    j["linear_conv_kernel_dim"] = c.ssm_conv_kernel;
    j["linear_key_head_dim"] = j["linear_value_head_dim"] = c.ssm_state;
    j["linear_num_key_heads"] = c.ssm_k_heads;
    j["linear_num_value_heads"] = c.ssm_v_heads;
    j["full_attention_interval"] = c.full_attn_interval;
    std::vector<std::string> types;
    for (int l = 0; l < c.n_layer; ++l) types.push_back(c.is_recurrent_layer(l) ? "linear_attention" : "full_attention");
    j["layer_types"] = types;
    j["attn_output_gate"] = true;
    j["model_type"] = c.arch == "qwen3next" ? "qwen3_next" : c.arch == "qwen35" ? "qwen3_5_text" : "qwen3_5_moe_text";
    if (c.is_moe()) {
      j["shared_expert_intermediate_size"] = c.n_ff_shexp;
      j.erase("intermediate_size");
    }
    if (c.arch != "qwen3next") {  // transformers 5: rope_theta and partial_rotary_factor in rope_parameters
      j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", c.rope.freq_base},
                              {"partial_rotary_factor", j["partial_rotary_factor"]}, {"mrope_interleaved", true}};
      j.erase("partial_rotary_factor");
      j.erase("rope_theta");
      j.erase("rope_scaling");
    }
    if (c.arch == "qwen35moe") {  // the multimodal wrapper
      nlohmann::json top = {{"architectures", j["architectures"]}, {"model_type", "qwen3_5_moe"},
                            {"tie_word_embeddings", c.tied_embeddings}, {"vision_config", {{"depth", 1}}}};
      j.erase("architectures");
      top["text_config"] = std::move(j);
      return top;
    }
  }
  if (c.arch == "mistral3") {  // the multimodal wrapper: the decoder's fields in text_config
    j["model_type"] = "mistral";
    nlohmann::json top = {{"architectures", j["architectures"]}, {"model_type", "mistral3"},
                          {"vision_config", {{"model_type", "pixtral"}}}};
    j.erase("architectures");
    top["text_config"] = std::move(j);
    return top;
  }
  return j;
}

// gpt-oss's expert tensors in GptOssForCausalLM's layout (one layer): mlp.experts.gate_up_proj
// (gate and up rows interleaved: row 2j is gate row j, 2j + 1 up row j) and down_proj, either
// float and transposed ([E, K, rows]: transformers multiplies x @ W) or MXFP4 (_blocks
// [E, rows, K/32, 16] with element 2i in byte i's low nibble, _scales [E, rows, K/32] E8M0,
// quantized as the GGUF writer quantizes them), and the biases gate_up_proj_bias [E, 2Fe]
// (interleaved) and down_proj_bias [E, C] (written by the generic path).
void add_gpt_oss_experts(safetensors_writer& w, nlohmann::json& weight_map, const std::string& shard, const std::string& st_type,
                         bool mxfp4, const std::string& layer, const planned* gate, const planned* up, const planned* down,
                         const planned* gate_b, const planned* up_b) {
  const std::string base = "model.layers." + layer + ".mlp.experts.";
  const size_t es = st_type == "F32" ? 4 : 2;
  auto put = [st_type](std::byte* out, float v) {
    if (st_type == "F32") { std::memcpy(out, &v, 4); return; }
    const uint16_t h = st_type == "F16" ? gpu::f32_to_f16(v) : gpu::f32_to_bf16(v);
    std::memcpy(out, &h, 2);
  };
  // The rows of expert e of a fused (gate, up) or plain (down) stack, in HF row order.
  struct stack { const planned* a; const planned* b; };  // b: the interleaved second half, or null
  auto rows_of = [](const stack& st, int64_t e, std::vector<float>& out) {
    const int64_t E = st.a->n_experts, n = st.a->n_rows / E, k = st.a->n_cols, parts = st.b ? 2 : 1;
    out.resize(static_cast<size_t>(parts * n * k));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < parts; ++p) file_row(p ? *st.b : *st.a, false, e * n + j, out.data() + (j * parts + p) * k);
  };
  for (const auto& [name, st] : {std::pair{std::string("gate_up_proj"), stack{gate, up}}, std::pair{std::string("down_proj"), stack{down, nullptr}}}) {
    const uint64_t E = static_cast<uint64_t>(st.a->n_experts), k = static_cast<uint64_t>(st.a->n_cols),
                   rows = static_cast<uint64_t>(st.a->n_rows) / E * (st.b ? 2 : 1);
    if (!mxfp4) {
      weight_map[base + name] = shard;
      w.add_tensor(base + name, st_type, {E, k, rows}, [=](std::span<std::byte> dst) {
        std::vector<float> v;
        for (uint64_t e = 0; e < E; ++e) {
          rows_of(st, static_cast<int64_t>(e), v);
          for (uint64_t r = 0; r < rows; ++r)
            for (uint64_t i = 0; i < k; ++i) put(dst.data() + ((e * k + i) * rows + r) * es, v[r * k + i]);
        }
      });
      continue;
    }
    const uint64_t nb = k / 32;
    auto blocks = [=](std::span<std::byte> dst, bool scales) {
      std::vector<float> v;
      std::byte blk[17];
      for (uint64_t e = 0; e < E; ++e) {
        rows_of(st, static_cast<int64_t>(e), v);
        for (uint64_t r = 0; r < rows; ++r)
          for (uint64_t c = 0; c < nb; ++c) {
            gpu::quantize_row(gpu::dtype::mxfp4, v.data() + r * k + c * 32, blk, 32);
            const uint64_t at = (e * rows + r) * nb + c;
            if (scales) { dst[at] = blk[0]; continue; }
            auto elem = [&](int x) { return x < 16 ? static_cast<uint8_t>(blk[1 + x]) & 0xf : static_cast<uint8_t>(blk[1 + x - 16]) >> 4; };
            for (int i = 0; i < 16; ++i) dst[at * 16 + i] = static_cast<std::byte>(elem(2 * i) | (elem(2 * i + 1) << 4));
          }
      }
    };
    weight_map[base + name + "_blocks"] = weight_map[base + name + "_scales"] = shard;
    w.add_tensor(base + name + "_blocks", "U8", {E, rows, nb, 16}, [=](std::span<std::byte> d) { blocks(d, false); });
    w.add_tensor(base + name + "_scales", "U8", {E, rows, nb}, [=](std::span<std::byte> d) { blocks(d, true); });
  }
  const uint64_t E = static_cast<uint64_t>(gate_b->n_rows), n = static_cast<uint64_t>(gate_b->n_cols);
  weight_map[base + "gate_up_proj_bias"] = shard;
  w.add_tensor(base + "gate_up_proj_bias", st_type, {E, 2 * n}, [=](std::span<std::byte> dst) {
    std::vector<float> g(n), u(n);
    for (uint64_t e = 0; e < E; ++e) {
      file_row(*gate_b, false, static_cast<int64_t>(e), g.data());
      file_row(*up_b, false, static_cast<int64_t>(e), u.data());
      for (uint64_t j = 0; j < n; ++j) {
        put(dst.data() + (e * 2 * n + 2 * j) * es, g[j]);
        put(dst.data() + (e * 2 * n + 2 * j + 1) * es, u[j]);
      }
    }
  });
}

}  // namespace

result<void> write_test_hf(const test_model_spec& sp, const std::string& dir, int n_shards) {
  if (!sp.preset.empty()) return fail(errc::invalid_argument, "a quantization preset needs the gguf format");
  const auto t = sp.weight_type;
  if (t != gpu::dtype::f32 && t != gpu::dtype::f16 && t != gpu::dtype::bf16)
    return fail(errc::invalid_argument, "HF directories hold f32, f16 or bf16 weights only");
  if (sp.config.arch != "llama" && sp.config.arch != "qwen2" && sp.config.arch != "qwen3" && sp.config.arch != "smollm3" &&
      sp.config.arch != "phi3" && sp.config.arch != "gemma2" && sp.config.arch != "gemma3" &&
      sp.config.arch != "qwen3moe" && sp.config.arch != "mistral3" && sp.config.arch != "gpt-oss" && sp.config.arch != "qwen35" &&
      sp.config.arch != "qwen35moe" && sp.config.arch != "qwen3next" && sp.config.arch != "gemma4")
    return fail(errc::unsupported, "no HF layout is written for " + sp.config.arch);
  if (sp.expert_type && (*sp.expert_type != gpu::dtype::mxfp4 || sp.config.arch != "gpt-oss"))
    return fail(errc::invalid_argument, "HF expert stacks in another type than the rest: only gpt-oss's mxfp4");
  if (n_shards < 1 || n_shards > 99) return fail(errc::invalid_argument, "shard count must be 1..99");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(errc::io, "cannot create " + dir + ": " + ec.message());
  {
    auto cfg = hf_gemma_config(sp, hf_config(sp));  // Gemma 3 / 4 classes; the others as hf_config wrote them
    if (!cfg) return fail(std::move(cfg).error());
    std::ofstream f(dir + "/config.json");
    f << cfg->dump(2) << "\n";
    if (!f) return fail(errc::io, "cannot write " + dir + "/config.json");
  }
  const std::string st_type = t == gpu::dtype::f32 ? "F32" : t == gpu::dtype::f16 ? "F16" : "BF16";
  auto tensors = plan(sp);
  std::vector<safetensors_writer> shards(static_cast<size_t>(n_shards));
  nlohmann::json weight_map = nlohmann::json::object();
  auto shard_name = [&](int i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, n_shards);
    return n_shards == 1 ? std::string("model.safetensors") : std::string(buf);
  };
  // Mistral3ForConditionalGeneration's decoder tensors live under language_model. (its
  // vision tower is not written: the loader ignores it).
  const std::string prefix = sp.config.arch == "mistral3" ? "language_model." : "";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const planned* tp = &tensors[i];
    if (tp->name == "rope_freqs.weight") continue;  // HF keeps rope_scaling in config.json
    const int shard = static_cast<int>(i * static_cast<size_t>(n_shards) / tensors.size());
    if (auto h = hybrid_hf(sp.config, tensors, *tp)) {
      if (h->skip) continue;
      // Qwen3_5MoeForConditionalGeneration (written for qwen35moe) keeps the decoder under model.language_model.
      std::string name = h->name;
      if (sp.config.arch == "qwen35moe" && name.starts_with("model.")) name = "model.language_model." + name.substr(6);
      weight_map[name] = shard_name(shard);
      shards[static_cast<size_t>(shard)].add_tensor(name, st_type, h->shape, [h = *h, t](std::span<std::byte> dst) {
        std::vector<float> row(static_cast<size_t>(h.n_cols));
        for (int64_t r = 0; r < h.n_rows; ++r) {
          h.row(r, row.data());
          encode_row(row, t, dst.data() + static_cast<size_t>(r) * row.size() * (t == gpu::dtype::f32 ? 4 : 2));
        }
      });
      continue;
    }
    // Gemma 2/3's HF norms hold w of (1 + w): the GGUF value less one (Gemma 4's hold the weight).
    const float norm_shift =
        sp.config.post_norms && sp.config.arch != "gemma4" && tp->name.ends_with("norm.weight") ? -1.f : 0.f;
    if (sp.config.arch == "gpt-oss" && (tp->n_experts > 0 || tp->name.find("_exps.bias") != std::string::npos)) {
      if (tp->name.find("ffn_gate_exps.weight") == std::string::npos) {
        if (tp->name.find("ffn_down_exps.bias") == std::string::npos) continue;  // written with the gate stack
      } else {
        const std::string p = tp->name.substr(0, tp->name.find("ffn_"));
        auto find = [&](const std::string& n) {
          for (const auto& x : tensors)
            if (x.name == p + n) return &x;
          return static_cast<const planned*>(nullptr);
        };
        const std::string layer = p.substr(4, p.size() - 5);
        add_gpt_oss_experts(shards[static_cast<size_t>(shard)], weight_map, shard_name(shard), st_type,
                            sp.expert_type == gpu::dtype::mxfp4, layer, tp, find("ffn_up_exps.weight"),
                            find("ffn_down_exps.weight"), find("ffn_gate_exps.bias"), find("ffn_up_exps.bias"));
        continue;
      }
    }
    // An expert stack {cols, rows / E, E} is E tensors mlp.experts.<e>.<proj>.weight; Gemma 4's
    // is one parameter [E, rows / E, cols] (experts.gate_up_proj, experts.down_proj).
    const bool stacked = tp->n_experts > 0 && sp.config.arch == "gemma4";
    const int64_t n_parts = tp->n_experts > 0 && !stacked ? tp->n_experts : 1, part_rows = tp->n_rows / n_parts;
    for (int64_t e = 0; e < n_parts; ++e) {
      std::string hf = prefix + hf_tensor_name(tp->name, &sp.config);
      if (tp->n_experts > 0 && !stacked) {
        const auto dot = tp->name.find('.', 4);
        const std::string layer = tp->name.substr(4, dot - 4);
        const std::string proj = tp->name.find("gate_exps") != std::string::npos ? "gate_proj"
                                 : tp->name.find("up_exps") != std::string::npos ? "up_proj" : "down_proj";
        hf = "model.layers." + layer + ".mlp.experts." + std::to_string(e) + "." + proj + ".weight";
      }
      if (sp.config.arch == "qwen35moe" && hf.starts_with("model.")) hf = "model.language_model." + hf.substr(6);
      hf = hf_gemma_tensor_name(sp, hf);
      std::vector<uint64_t> shape;
      if (stacked) shape.push_back(static_cast<uint64_t>(tp->n_experts));
      if (tp->is_matrix) shape.push_back(static_cast<uint64_t>(stacked ? part_rows / tp->n_experts : part_rows));
      shape.push_back(static_cast<uint64_t>(tp->n_cols));
      weight_map[hf] = shard_name(shard);
      const int64_t row0 = e * part_rows;
      shards[static_cast<size_t>(shard)].add_tensor(hf, st_type, shape, [tp, t, norm_shift, row0, part_rows](std::span<std::byte> dst) {
        std::vector<float> row(static_cast<size_t>(tp->n_cols));
        const size_t es = t == gpu::dtype::f32 ? 4 : 2;
        for (int64_t r = 0; r < part_rows; ++r) {
          file_row(*tp, false, row0 + r, row.data());
          for (auto& x : row) x += norm_shift;
          std::byte* out = dst.data() + static_cast<size_t>(r) * row.size() * es;
          for (size_t k = 0; k < row.size(); ++k) {
            if (t == gpu::dtype::f32) { std::memcpy(out + 4 * k, &row[k], 4); continue; }
            uint16_t h = t == gpu::dtype::f16 ? gpu::f32_to_f16(row[k]) : gpu::f32_to_bf16(row[k]);
            std::memcpy(out + 2 * k, &h, 2);
          }
        }
      });
    }
  }
  for (int i = 0; i < n_shards; ++i) {
    shards[static_cast<size_t>(i)].add_metadata("format", "pt");
    VKS_TRY(shards[static_cast<size_t>(i)].write(dir + "/" + shard_name(i)));
  }
  if (n_shards > 1) {
    nlohmann::json idx = {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}};
    std::ofstream f(dir + "/model.safetensors.index.json");
    f << idx.dump(2) << "\n";
    if (!f) return fail(errc::io, "cannot write the shard index");
  }
  return ok();
}

}  // namespace vks::model
