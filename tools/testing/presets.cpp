// llama.cpp's quantization presets as per-tensor types (see presets.hpp). Rules restated
// from llama.cpp's documented mixes (src/llama-quant.cpp): the dense-model branches, and for
// MoE files the expert stacks as their dense kin (ffn_down_exps as ffn_down) plus the
// 8-expert rules; the router (ffn_gate_inp) is never quantized (the generator keeps it f32).
#include "testing/presets.hpp"

#include <cstdio>
#include <initializer_list>
#include <optional>

namespace vks::model {

namespace {

using gpu::dtype;

struct preset_info {
  const char* name;
  dtype base;
};
constexpr preset_info k_presets[] = {{"Q4_K_M", dtype::q4_K}, {"Q4_K_S", dtype::q4_K}, {"Q5_K_M", dtype::q5_K},
                                     {"Q3_K_M", dtype::q3_K}, {"Q2_K", dtype::q2_K},   {"IQ4_XS", dtype::iq4_xs},
                                     {"MXFP4", dtype::mxfp4},   {"IQ3_XXS", dtype::iq3_xxs},
                                     {"IQ2_XXS", dtype::iq2_xxs}, {"IQ2_XS", dtype::iq2_xs}, {"IQ2_M", dtype::iq2_s},
                                     {"IQ1_S", dtype::iq1_s},   {"IQ1_M", dtype::iq1_m},  {"UD-Q2_K_XL", dtype::q2_K}};

// llama.cpp's layer pattern for the "more bits" tensors of the _M mixes.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

int layer_of(std::string_view name) {
  int l = -1;
  if (name.rfind("blk.", 0) == 0) std::sscanf(std::string(name).c_str(), "blk.%d.", &l);
  return l;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_one_of(std::string_view p, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (p == n) return true;
  return false;
}

// llama.cpp's low-bit i-quant ftypes (no importance matrix: IQ3_XXS takes its !has_imatrix
// branches): IQ2_XXS/IQ2_XS/IQ2_M/IQ1_S/IQ1_M share one rule set, IQ3_XXS has its own.
// nullopt: the tensor keeps the base type.
std::optional<dtype> iquant_type(std::string_view p, const model_config& c, std::string_view name, int i, bool output,
                                 bool embd) {
  const int n = c.n_layer, gqa = c.n_head_kv > 0 ? c.n_head / c.n_head_kv : 1;
  const bool m2 = p == "IQ2_M";
  if (p == "IQ3_XXS") {
    if (output) return dtype::q5_K;
    if (embd) return dtype::iq3_s;
    if (ends_with(name, "attn_v.weight")) return gqa >= 4 ? dtype::q4_K : dtype::iq3_s;
    if (ends_with(name, "attn_q.weight") || ends_with(name, "attn_k.weight")) return dtype::iq2_s;
    if (ends_with(name, "ffn_down.weight")) return i < n / 8 ? dtype::q4_K : dtype::q3_K;
    if (ends_with(name, "attn_output.weight")) return dtype::iq3_s;
    return std::nullopt;
  }
  if (output) return dtype::q5_K;
  if (embd) return m2 ? dtype::iq3_s : dtype::q2_K;
  if (ends_with(name, "attn_v.weight")) return gqa >= 4 ? dtype::q4_K : m2 ? dtype::iq3_s : dtype::q2_K;
  if (ends_with(name, "ffn_down.weight") && i < n / 8) return m2 ? dtype::iq3_s : dtype::q2_K;
  if (ends_with(name, "attn_output.weight")) {
    if (p == "IQ1_S" || p == "IQ1_M") return dtype::iq2_xxs;
    if (m2) return dtype::iq3_s;
  }
  return std::nullopt;
}

// UD-Q2_K_XL: our stand-in for Unsloth's dynamic 2-bit mixes (the exact per-tensor choices
// of their files come from their own importance analysis; this keeps their shape): the
// first and last eighth of the layers and the embeddings stay at 4-8 bits (q4_K, q6_K,
// q8_0 attn_v), the middle layers mix i-quants by tensor: attn_q iq3_xxs, attn_k iq3_s,
// attn_v q4_K, attn_output iq2_s, ffn_gate iq2_xxs, ffn_up iq2_xs, ffn_down q2_K.
dtype ud_q2_k_xl_type(const model_config& c, std::string_view name, int i, bool output, bool embd) {
  const int n = c.n_layer;
  if (output) return dtype::q6_K;
  if (embd) return dtype::q4_K;
  if (i < n / 8 || i >= 7 * n / 8) {
    if (ends_with(name, "attn_v.weight")) return dtype::q8_0;
    return ends_with(name, "ffn_down.weight") ? dtype::q6_K : dtype::q4_K;
  }
  if (ends_with(name, "attn_q.weight")) return dtype::iq3_xxs;
  if (ends_with(name, "attn_k.weight")) return dtype::iq3_s;
  if (ends_with(name, "attn_v.weight")) return dtype::q4_K;
  if (ends_with(name, "attn_output.weight")) return dtype::iq2_s;
  if (ends_with(name, "ffn_gate.weight")) return dtype::iq2_xxs;
  if (ends_with(name, "ffn_up.weight")) return dtype::iq2_xs;
  return dtype::q2_K;
}

// The type before the block-size fallback.
dtype wanted_type(std::string_view p, dtype base, const model_config& c, std::string_view name, int64_t n_cols) {
  const int i = layer_of(name), n = c.n_layer;
  const int gqa = c.n_head_kv > 0 ? c.n_head / c.n_head_kv : 1;
  const bool output = name == "output.weight" || (c.tied_embeddings && name == "token_embd.weight");
  if (p == "MXFP4") {
    const bool ffn = ends_with(name, "ffn_gate.weight") || ends_with(name, "ffn_up.weight") ||
                     ends_with(name, "ffn_down.weight") || ends_with(name, "_exps.weight");
    return ffn ? dtype::mxfp4 : dtype::q8_0;
  }
  if (output && n_cols % gpu::traits(base).block_elems != 0) return dtype::q8_0;
  const bool embd = name == "token_embd.weight" && !output;
  if (p == "UD-Q2_K_XL") return ud_q2_k_xl_type(c, name, i, output, embd);
  if (is_one_of(p, {"IQ3_XXS", "IQ2_XXS", "IQ2_XS", "IQ2_M", "IQ1_S", "IQ1_M"}))
    return iquant_type(p, c, name, i, output, embd).value_or(base);
  if (output) return dtype::q6_K;
  // 8-expert models (llama.cpp: "bumping this to Q8_0 trades just ~128MB"): attn_k and attn_v
  // in q8_0, attn_output in q5_K for the low-bit mixes.
  if (c.n_expert == 8 && (ends_with(name, "attn_v.weight") || ends_with(name, "attn_k.weight"))) return dtype::q8_0;
  if (c.n_expert == 8 && ends_with(name, "attn_output.weight") &&
      (p == "Q2_K" || p == "Q3_K_M" || p == "Q4_K_S" || p == "Q4_K_M"))
    return dtype::q5_K;
  if (ends_with(name, "attn_v.weight")) {
    if (p == "Q2_K") return gqa >= 4 ? dtype::q4_K : dtype::q3_K;
    if (p == "Q3_K_M") return i < 2 ? dtype::q5_K : dtype::q4_K;
    if (p == "IQ4_XS" && gqa >= 4) return dtype::q5_K;
    if ((p == "Q4_K_M" || p == "Q5_K_M") && use_more_bits(i, n)) return dtype::q6_K;
    if (p == "Q4_K_S" && i < 4) return dtype::q5_K;
    return base;
  }
  if (ends_with(name, "ffn_down.weight") || ends_with(name, "ffn_down_exps.weight")) {
    if (p == "Q2_K") return dtype::q3_K;
    if (p == "Q3_K_M") return i < n / 16 ? dtype::q5_K : dtype::q4_K;
    if (p == "Q4_K_M" && use_more_bits(i, n)) return dtype::q6_K;
    if (p == "IQ4_XS" && i < n / 8) return dtype::q5_K;
    if (p == "Q5_K_M" && use_more_bits(i, n)) return dtype::q6_K;
    if (p == "Q4_K_S" && i < n / 8) return dtype::q5_K;
    return base;
  }
  if (ends_with(name, "attn_output.weight")) {
    if (p == "Q2_K") return dtype::q3_K;
    if (p == "Q3_K_M") return dtype::q4_K;
  }
  return base;
}

}  // namespace

std::vector<std::string> test_preset_names() {
  std::vector<std::string> v;
  for (auto& p : k_presets) v.emplace_back(p.name);
  return v;
}

bool is_test_preset(std::string_view preset) {
  for (auto& p : k_presets)
    if (preset == p.name) return true;
  return false;
}

dtype preset_tensor_type(std::string_view preset, const model_config& c, std::string_view name, int64_t n_cols) {
  dtype base = dtype::q8_0;
  for (auto& p : k_presets)
    if (preset == p.name) base = p.base;
  dtype t = wanted_type(preset, base, c, name, n_cols);
  if (n_cols % gpu::traits(t).block_elems == 0) return t;
  switch (t) {
    case dtype::iq4_xs:
    case dtype::iq3_xxs:
    case dtype::iq3_s:
    case dtype::iq2_xxs:
    case dtype::iq2_xs:
    case dtype::iq2_s:
    case dtype::iq1_s:
    case dtype::iq1_m: t = dtype::iq4_nl; break;
    case dtype::q2_K:
    case dtype::q3_K: t = dtype::q4_0; break;
    case dtype::q4_K: t = dtype::q5_0; break;
    case dtype::q5_K: t = dtype::q5_1; break;
    case dtype::q6_K: t = dtype::q8_0; break;
    default: break;
  }
  return n_cols % gpu::traits(t).block_elems == 0 ? t : dtype::f16;
}

}  // namespace vks::model
