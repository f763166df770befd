// Qwen3.5 / Qwen3-Next HF tensors to GGUF layout (facts from llama.cpp's converter classes
// Qwen3NextModel and _LinearAttentionVReorderBase): see hf_hybrid.hpp.
#include "model/hf_hybrid.hpp"

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "gpu/quant.hpp"

namespace vks::model {
namespace {

bool is_hybrid_arch(const model_config& c) { return c.arch == "qwen35" || c.arch == "qwen35moe" || c.arch == "qwen3next"; }

weight_ref owned(weight_ref w, std::vector<std::byte> bytes) {
  auto b = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  w.data = std::span<const std::byte>(b->data(), b->size());
  w.owner = std::move(b);
  return w;
}

// A 1-D tensor as f32, f applied to each element and element p taken from src(p).
template <class F, class Src>
weight_ref map_vector(const weight_ref& w, F f, Src src) {
  const int64_t n = w.ne[0];
  std::vector<float> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  gpu::dequantize_row(w.type, w.data.data(), in.data(), n);
  for (int64_t p = 0; p < n; ++p) out[static_cast<size_t>(p)] = f(in[static_cast<size_t>(src(p))]);
  std::vector<std::byte> bytes(static_cast<size_t>(n) * 4);
  std::memcpy(bytes.data(), out.data(), bytes.size());
  weight_ref r = w;
  r.type = gpu::dtype::f32;
  return owned(std::move(r), std::move(bytes));
}

// The value-head order: GGUF's tiled head p (j * Hk + g) is HF's grouped head g * r + j.
struct head_order {
  int64_t Hk, r;
  int64_t grouped(int64_t p) const { return (p % Hk) * r + p / Hk; }
  // Row o of the GGUF tensor: rows below `fixed` as they are, then heads of `head_rows` rows.
  int64_t src_row(int64_t o, int64_t fixed, int64_t head_rows) const {
    if (o < fixed) return o;
    const int64_t p = (o - fixed) / head_rows, i = (o - fixed) % head_rows;
    return fixed + grouped(p) * head_rows + i;
  }
};

size_t elem_bytes(gpu::dtype t) { return gpu::traits(t).block_bytes / gpu::traits(t).block_elems; }

weight_ref reorder_rows(const weight_ref& w, const head_order& h, int64_t fixed, int64_t head_rows) {
  const size_t row = static_cast<size_t>(w.ne[0]) * elem_bytes(w.type);
  std::vector<std::byte> bytes(w.data.size());
  for (int64_t o = 0; o < w.ne[1]; ++o)
    std::memcpy(bytes.data() + static_cast<size_t>(o) * row, w.data.data() + static_cast<size_t>(h.src_row(o, fixed, head_rows)) * row, row);
  return owned(w, std::move(bytes));
}

// ssm_out {VD, C}: each row's head-wide column blocks in tiled order.
weight_ref reorder_cols(const weight_ref& w, const head_order& h, int64_t head_cols) {
  const size_t es = elem_bytes(w.type), row = static_cast<size_t>(w.ne[0]) * es, blk = static_cast<size_t>(head_cols) * es;
  std::vector<std::byte> bytes(w.data.size());
  for (int64_t r = 0; r < w.ne[1]; ++r)
    for (int64_t p = 0; p < w.ne[0] / head_cols; ++p)
      std::memcpy(bytes.data() + static_cast<size_t>(r) * row + static_cast<size_t>(p) * blk,
                  w.data.data() + static_cast<size_t>(r) * row + static_cast<size_t>(h.grouped(p)) * blk, blk);
  return owned(w, std::move(bytes));
}

}  // namespace

std::string hf_hybrid_layer_name(std::string_view s, const model_config& c) {
  if (!is_hybrid_arch(c)) return {};
  static const std::pair<std::string_view, std::string_view> k_map[] = {
      {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight"},   {"attn_gate.weight", "linear_attn.in_proj_z.weight"},
      {"ssm_beta.weight", "linear_attn.in_proj_b.weight"},     {"ssm_alpha.weight", "linear_attn.in_proj_a.weight"},
      {"ssm_ba.weight", "linear_attn.in_proj_ba.weight"},      {"ssm_in.weight", "linear_attn.in_proj_qkvz.weight"},
      {"ssm_conv1d.weight", "linear_attn.conv1d.weight"},      {"ssm_dt.bias", "linear_attn.dt_bias"},
      {"ssm_a", "linear_attn.A_log"},                          {"ssm_norm.weight", "linear_attn.norm.weight"},
      {"ssm_out.weight", "linear_attn.out_proj.weight"},       {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"},
      {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
      {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
      {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"}};
  for (auto& [from, to] : k_map)
    if (s == from) return std::string(to);
  return {};
}

result<weight_ref> hf_hybrid_convert(const model_config& c, std::string_view g, weight_ref w) {
  if (!is_hybrid_arch(c)) return w;
  const auto dot = g.starts_with("blk.") ? g.find('.', 4) : std::string_view::npos;
  const std::string_view s = dot == std::string_view::npos ? g : g.substr(dot + 1);
  // Qwen3-Next keeps HF's grouped value heads (the layer loader reorders them); Qwen3.5's
  // GGUF holds them tiled.
  const bool tile = c.arch != "qwen3next";
  const int64_t S = c.ssm_state, Hk = c.ssm_k_heads, Hv = c.ssm_v_heads, QK = 2 * Hk * S;
  const head_order h{Hk, Hv / Hk};
  auto bad = [&](const char* what) {
    return fail(errc::parse, "tensor '" + std::string(g) + "' (HF layout): " + what);
  };
  if (s.ends_with("norm.weight") && s != "ssm_norm.weight") {  // zero-centred: GGUF holds 1 + w
    if (w.n_dims != 1) return bad("a norm that is not a vector");
    return map_vector(w, [](float x) { return x + 1.f; }, [](int64_t p) { return p; });
  }
  if (s == "ssm_a" || s == "ssm_dt.bias") {
    if (w.n_dims != 1 || w.ne[0] != Hv) return bad("not one value a value head");
    auto src = [&](int64_t p) { return tile ? h.grouped(p) : p; };
    if (s == "ssm_a") return map_vector(w, [](float x) { return -std::exp(x); }, src);
    return map_vector(w, [](float x) { return x; }, src);
  }
  if (s == "ssm_conv1d.weight") {  // HF {K, 1, Cc} (PyTorch's Conv1d [Cc, 1, K]) -> {K, Cc}
    if (w.n_dims == 3 && w.ne[1] == 1) w = weight_ref{w.name, w.type, {w.ne[0], w.ne[2], 1, 1}, 2, w.data, w.owner};
    if (w.n_dims != 2 || w.ne[1] != c.ssm_conv_channels()) return bad("not {kernel, channels}");
    return tile ? reorder_rows(w, h, QK, S) : w;
  }
  if (!tile) return w;
  if (s == "attn_qkv.weight" || s == "attn_gate.weight" || s == "ssm_beta.weight" || s == "ssm_alpha.weight") {
    const int64_t fixed = s == "attn_qkv.weight" ? QK : 0, head = s.starts_with("ssm_") ? 1 : S;
    if (w.n_dims != 2 || w.ne[1] != fixed + Hv * head) return bad("rows are not the value heads'");
    return reorder_rows(w, h, fixed, head);
  }
  if (s == "ssm_out.weight") {
    if (w.n_dims != 2 || w.ne[0] != Hv * S) return bad("columns are not the value heads'");
    return reorder_cols(w, h, S);
  }
  return w;
}

}  // namespace vks::model
