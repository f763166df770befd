// Weight validation and upload: expected shapes per tensor from the config, host-side
// conversion of 1-D tensors to f32, one backend allocation + upload per tensor, except the
// q/k/v and gate/up projections (and q/k/v biases), stacked into one tensor each when they
// share a type, so a step multiplies each group in one matmul (gpu::backend::matmul_split,
// matmul_swiglu).
#include "model/weights.hpp"

#include <cmath>
#include <cstring>

#include "gpu/quant.hpp"

namespace vks::model {
namespace {

// dst = the loaded tensor, or its loading error.
result<void> put(gpu::tensor& dst, result<gpu::tensor> t) {
  if (!t) return fail(std::move(t).error());
  dst = *t;
  return ok();
}

std::string shape_str(const std::array<int64_t, 4>& ne, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "}";
}

struct loader {
  const model_file& file;
  gpu::backend& be;
  uint64_t n_bytes = 0;
  // Added to every *norm.weight vector: 1 for Gemma's HF checkpoints, which store w of
  // (1 + w) x / rms(x) (llama.cpp's converter adds the 1 into GGUF files).
  float norm_offset = 0.f;

  result<weight_ref> checked(const std::string& name, std::array<int64_t, 4> want, int n_dims) {
    auto w = file.tensor(name);
    if (!w) return w;
    int have_dims = w->n_dims;
    while (have_dims > n_dims && w->ne[have_dims - 1] == 1) --have_dims;
    bool same = have_dims == n_dims;
    for (int i = 0; same && i < 4; ++i) same = w->ne[i] == (i < n_dims ? want[i] : 1);
    if (!same)
      return fail(errc::parse, file.path() + ": tensor '" + name + "' has shape " + shape_str(w->ne, w->n_dims) +
                                   ", expected " + shape_str(want, n_dims));
    if (w->ne[0] % gpu::traits(w->type).block_elems != 0)
      return fail(errc::parse, file.path() + ": tensor '" + name + "' row length is not a multiple of its block size");
    return w;
  }

  result<gpu::tensor> upload(const weight_ref& w, gpu::dtype type, std::span<const std::byte> bytes) {
    auto t = be.alloc(type, w.ne, w.name);
    if (!t) return t;
    if (bytes.size() != t->nbytes())
      return fail(errc::parse, file.path() + ": tensor '" + w.name + "' byte size does not match its shape");
    VKS_TRY(be.upload(*t, bytes));
    n_bytes += bytes.size();
    return t;
  }

  // A matrix {k, n}, uploaded in its stored type.
  result<gpu::tensor> matrix(const std::string& name, int64_t k, int64_t n) {
    auto w = checked(name, {k, n, 1, 1}, 2);
    if (!w) return fail(std::move(w).error());
    return upload(*w, w->type, w->data);
  }

  // Matrices {k, n_i} (names[i]) stacked by rows into one {k, sum n_i} tensor named `name`
  // when all have one type; an empty tensor (ne[0] == 0) when the types differ.
  result<gpu::tensor> stacked(const std::string& name, const std::vector<std::string>& names, int64_t k,
                              const std::vector<int64_t>& ns) {
    std::vector<weight_ref> refs;
    int64_t rows = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      auto w = checked(names[i], {k, ns[i], 1, 1}, 2);
      if (!w) return fail(std::move(w).error());
      if (!refs.empty() && w->type != refs[0].type) return gpu::tensor{.ne = {0, 1, 1, 1}};
      refs.push_back(*w);
      rows += ns[i];
    }
    std::vector<std::byte> bytes;
    for (const auto& r : refs) bytes.insert(bytes.end(), r.data.begin(), r.data.end());
    weight_ref all{name, refs[0].type, {k, rows, 1, 1}, 2, bytes};
    return upload(all, all.type, bytes);
  }

  // Rows `rows` (indices into w's {k, n} rows, in this order) of w as one {k, rows.size()}
  // tensor `name` in w's type (qwen3next's head reordering at load).
  result<gpu::tensor> gathered(const std::string& name, const weight_ref& w, const std::vector<int64_t>& rows) {
    const uint64_t rb = gpu::row_bytes(w.type, static_cast<uint64_t>(w.ne[0]));
    if (w.data.size() != rb * static_cast<uint64_t>(w.ne[1]))
      return fail(errc::parse, file.path() + ": tensor '" + w.name + "' byte size does not match its shape");
    std::vector<std::byte> bytes;
    bytes.reserve(rb * rows.size());
    for (int64_t r : rows) {
      const auto at = w.data.begin() + static_cast<std::ptrdiff_t>(rb * static_cast<uint64_t>(r));
      bytes.insert(bytes.end(), at, at + static_cast<std::ptrdiff_t>(rb));
    }
    weight_ref out{name, w.type, {w.ne[0], static_cast<int64_t>(rows.size()), 1, 1}, 2, bytes};
    return upload(out, w.type, bytes);
  }

  // Expert stacks {k, n, E} (3-D, uploaded in their stored type).
  result<gpu::tensor> experts(const std::string& name, int64_t k, int64_t n, int64_t e) {
    auto w = checked(name, {k, n, e, 1}, 3);
    if (!w) return fail(std::move(w).error());
    return upload(*w, w->type, w->data);
  }

  // ffn_gate_exps and ffn_up_exps {k, n, E} interleaved per expert into one {k, 2n, E}
  // tensor (expert e's gate rows, then its up rows: what matmul_id_swiglu reads); an empty
  // tensor when their types differ.
  result<gpu::tensor> interleaved_experts(const std::string& name, const std::string& gate, const std::string& up,
                                          int64_t k, int64_t n, int64_t e) {
    auto g = checked(gate, {k, n, e, 1}, 3);
    if (!g) return fail(std::move(g).error());
    auto u = checked(up, {k, n, e, 1}, 3);
    if (!u) return fail(std::move(u).error());
    if (g->type != u->type) return gpu::tensor{.ne = {0, 1, 1, 1}};
    const uint64_t half = gpu::row_bytes(g->type, static_cast<uint64_t>(k)) * static_cast<uint64_t>(n);
    if (g->data.size() != half * static_cast<uint64_t>(e) || u->data.size() != g->data.size())
      return fail(errc::parse, file.path() + ": tensor '" + gate + "' byte size does not match its shape");
    std::vector<std::byte> bytes;
    bytes.reserve(2 * g->data.size());
    for (int64_t i = 0; i < e; ++i) {
      const auto at = static_cast<std::ptrdiff_t>(half * static_cast<uint64_t>(i));
      bytes.insert(bytes.end(), g->data.begin() + at, g->data.begin() + at + static_cast<std::ptrdiff_t>(half));
      bytes.insert(bytes.end(), u->data.begin() + at, u->data.begin() + at + static_cast<std::ptrdiff_t>(half));
    }
    weight_ref all{name, g->type, {k, 2 * n, e, 1}, 3, bytes};
    return upload(all, all.type, bytes);
  }

  // Per-expert bias matrices {n, E} (gate, then optionally up) converted to f32; with up,
  // interleaved per expert into one {2n, E} tensor (expert e's gate bias, then its up bias),
  // the order of interleaved_experts' rows.
  result<gpu::tensor> expert_biases(const std::string& name, const std::string& gate, const std::string& up, int64_t n,
                                    int64_t e) {
    std::vector<weight_ref> refs;
    for (const std::string* nm : {&gate, &up}) {
      if (nm->empty()) continue;
      auto w = checked(*nm, {n, e, 1, 1}, 2);
      if (!w) return fail(std::move(w).error());
      refs.push_back(*w);
    }
    const int64_t parts = static_cast<int64_t>(refs.size());
    std::vector<float> f(static_cast<size_t>(parts * n * e));
    for (int64_t i = 0; i < e; ++i)
      for (int64_t j = 0; j < parts; ++j) {
        const auto& r = refs[static_cast<size_t>(j)];
        const uint64_t rb = gpu::row_bytes(r.type, static_cast<uint64_t>(n));
        if (r.data.size() != rb * static_cast<uint64_t>(e))
          return fail(errc::parse, file.path() + ": tensor '" + r.name + "' byte size does not match its shape");
        float* dst = f.data() + (i * parts + j) * n;
        if (r.type == gpu::dtype::f32) std::memcpy(dst, r.data.data() + rb * static_cast<uint64_t>(i), static_cast<size_t>(n) * 4);
        else gpu::dequantize_row(r.type, r.data.data() + rb * static_cast<uint64_t>(i), dst, n);
      }
    const auto bytes = std::as_bytes(std::span(f));
    return upload(weight_ref{name, gpu::dtype::f32, {parts * n, e, 1, 1}, 2, bytes}, gpu::dtype::f32, bytes);
  }

  // Vectors {n_i} converted to f32 and stacked into one {sum n_i} tensor named `name`.
  result<gpu::tensor> stacked_vectors(const std::string& name, const std::vector<std::string>& names,
                                      const std::vector<int64_t>& ns) {
    std::vector<float> f;
    int64_t n = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      auto w = checked(names[i], {ns[i], 1, 1, 1}, 1);
      if (!w) return fail(std::move(w).error());
      f.resize(static_cast<size_t>(n + ns[i]));
      if (w->type == gpu::dtype::f32) std::memcpy(f.data() + n, w->data.data(), static_cast<size_t>(ns[i]) * 4);
      else gpu::dequantize_row(w->type, w->data.data(), f.data() + n, ns[i]);
      n += ns[i];
    }
    const auto bytes = std::as_bytes(std::span(f));
    return upload(weight_ref{name, gpu::dtype::f32, {n, 1, 1, 1}, 1, bytes}, gpu::dtype::f32, bytes);
  }

  // A matrix {k, n} converted to f32 on the host (small tensors the kernels read as f32).
  result<gpu::tensor> f32_matrix(const std::string& name, int64_t k, int64_t n) {
    auto w = checked(name, {k, n, 1, 1}, 2);
    if (!w) return fail(std::move(w).error());
    std::vector<float> f(static_cast<size_t>(k * n));
    const uint64_t rb = gpu::row_bytes(w->type, static_cast<uint64_t>(k));
    if (w->data.size() != rb * static_cast<uint64_t>(n)) return fail(errc::parse, file.path() + ": tensor '" + name + "' byte size does not match its shape");
    for (int64_t r = 0; r < n; ++r) gpu::dequantize_row(w->type, w->data.data() + rb * static_cast<uint64_t>(r), f.data() + r * k, k);
    return upload(weight_ref{name, gpu::dtype::f32, {k, n, 1, 1}, 2, {}}, gpu::dtype::f32, std::as_bytes(std::span(f)));
  }

  // A vector {n}, converted to f32.
  result<gpu::tensor> vector(const std::string& name, int64_t n) {
    auto w = checked(name, {n, 1, 1, 1}, 1);
    if (!w) return fail(std::move(w).error());
    std::vector<float> f(static_cast<size_t>(n));
    if (w->type == gpu::dtype::f32) std::memcpy(f.data(), w->data.data(), f.size() * 4);
    else gpu::dequantize_row(w->type, w->data.data(), f.data(), n);
    if (name.ends_with("norm.weight"))
      for (auto& x : f) x += norm_offset;
    return upload(*w, gpu::dtype::f32, std::as_bytes(std::span(f)));
  }
};

// The MoE FFN of one layer: router and expert stacks (layer_weights' MoE fields).
result<void> load_experts(loader& ld, const model_config& c, const std::string& p, layer_weights& w) {
  const int64_t C = c.n_embd, E = c.n_expert, Fe = c.n_ff_exp;
  VKS_TRY(put(w.ffn_gate_inp, ld.matrix(p + "ffn_gate_inp.weight", C, E)));
  VKS_TRY(put(w.w_gate_up_exps, ld.interleaved_experts(p + "ffn_gate_up_exps.weight", p + "ffn_gate_exps.weight",
                                                       p + "ffn_up_exps.weight", C, Fe, E)));
  if (w.w_gate_up_exps.ne[0] == 0) {
    VKS_TRY(put(w.w_gate_exps, ld.experts(p + "ffn_gate_exps.weight", C, Fe, E)));
    VKS_TRY(put(w.w_up_exps, ld.experts(p + "ffn_up_exps.weight", C, Fe, E)));
  }
  VKS_TRY(put(w.w_down_exps, ld.experts(p + "ffn_down_exps.weight", Fe, C, E)));
  if (!c.expert_bias) return ok();
  // gpt-oss: biases for the router and every expert; its clamped SwiGLU reads gate and up as
  // one matmul_id over the interleaved stack.
  if (w.w_gate_up_exps.ne[0] == 0)
    return fail(errc::unsupported, ld.file.path() + ": " + c.arch + " needs ffn_gate_exps and ffn_up_exps of one weight type");
  VKS_TRY(put(w.ffn_gate_inp_b, ld.vector(p + "ffn_gate_inp.bias", E)));
  VKS_TRY(put(w.b_gate_up_exps, ld.expert_biases(p + "ffn_gate_up_exps.bias", p + "ffn_gate_exps.bias",
                                                 p + "ffn_up_exps.bias", Fe, E)));
  return put(w.b_down_exps, ld.expert_biases(p + "ffn_down_exps.bias", p + "ffn_down_exps.bias", "", C, E));
}

// qwen35 gated attention: attn_q {C, 2 QD} holds per head D q rows then D gate rows; split
// into q (stacked with k and v into wqkv when the types agree) and wq_gate.
result<void> load_gated_attention(loader& ld, const model_config& c, const std::string& p, layer_weights& w) {
  const int64_t C = c.n_embd, D = c.head_dim, H = c.n_head, QD = H * D, KD = int64_t{c.n_head_kv} * D;
  auto q = ld.checked(p + "attn_q.weight", {C, 2 * QD, 1, 1}, 2);
  if (!q) return fail(std::move(q).error());
  auto k = ld.checked(p + "attn_k.weight", {C, KD, 1, 1}, 2);
  if (!k) return fail(std::move(k).error());
  auto v = ld.checked(p + "attn_v.weight", {C, KD, 1, 1}, 2);
  if (!v) return fail(std::move(v).error());
  const uint64_t rb = gpu::row_bytes(q->type, static_cast<uint64_t>(C)), head = rb * static_cast<uint64_t>(D);
  if (q->data.size() != rb * static_cast<uint64_t>(2 * QD))
    return fail(errc::parse, ld.file.path() + ": tensor '" + q->name + "' byte size does not match its shape");
  std::vector<std::byte> qb, gb;
  for (int64_t h = 0; h < H; ++h) {
    const auto at = q->data.begin() + static_cast<std::ptrdiff_t>(2 * head * static_cast<uint64_t>(h));
    qb.insert(qb.end(), at, at + static_cast<std::ptrdiff_t>(head));
    gb.insert(gb.end(), at + static_cast<std::ptrdiff_t>(head), at + static_cast<std::ptrdiff_t>(2 * head));
  }
  VKS_TRY(put(w.wq_gate, ld.upload(weight_ref{p + "attn_gate_rows", q->type, {C, QD, 1, 1}, 2, gb}, q->type, gb)));
  w.wqkv.ne = {0, 1, 1, 1};
  if (q->type == k->type && k->type == v->type) {
    std::vector<std::byte> all = qb;
    all.insert(all.end(), k->data.begin(), k->data.end());
    all.insert(all.end(), v->data.begin(), v->data.end());
    return put(w.wqkv, ld.upload(weight_ref{p + "attn_qkv.weight", q->type, {C, QD + 2 * KD, 1, 1}, 2, all}, q->type, all));
  }
  VKS_TRY(put(w.wq, ld.upload(weight_ref{p + "attn_q.weight", q->type, {C, QD, 1, 1}, 2, qb}, q->type, qb)));
  VKS_TRY(put(w.wk, ld.matrix(p + "attn_k.weight", C, KD)));
  return put(w.wv, ld.matrix(p + "attn_v.weight", C, KD));
}

// qwen35 gated DeltaNet layer: in-projections (stacked when the types agree), conv, gates,
// norm and out-projection.
result<void> load_delta_net(loader& ld, const model_config& c, const std::string& p, layer_weights& w) {
  const int64_t C = c.n_embd, S = c.ssm_state, Hv = c.ssm_v_heads, Cc = c.ssm_conv_channels(), VD = Hv * S;
  VKS_TRY(put(w.ssm_in, ld.stacked(p + "ssm_in", {p + "attn_qkv.weight", p + "attn_gate.weight"}, C, {Cc, VD})));
  if (w.ssm_in.ne[0] == 0) {
    VKS_TRY(put(w.ssm_qkv, ld.matrix(p + "attn_qkv.weight", C, Cc)));
    VKS_TRY(put(w.ssm_z, ld.matrix(p + "attn_gate.weight", C, VD)));
  }
  VKS_TRY(put(w.ssm_ba, ld.stacked(p + "ssm_ba", {p + "ssm_beta.weight", p + "ssm_alpha.weight"}, C, {Hv, Hv})));
  if (w.ssm_ba.ne[0] == 0) {
    VKS_TRY(put(w.ssm_beta, ld.matrix(p + "ssm_beta.weight", C, Hv)));
    VKS_TRY(put(w.ssm_alpha, ld.matrix(p + "ssm_alpha.weight", C, Hv)));
  }
  VKS_TRY(put(w.ssm_conv, ld.f32_matrix(p + "ssm_conv1d.weight", c.ssm_conv_kernel, Cc)));
  VKS_TRY(put(w.ssm_dt, ld.vector(p + "ssm_dt.bias", Hv)));
  VKS_TRY(put(w.ssm_a, ld.vector(p + "ssm_a", Hv)));
  VKS_TRY(put(w.ssm_norm, ld.vector(p + "ssm_norm.weight", S)));
  return put(w.ssm_out, ld.matrix(p + "ssm_out.weight", VD, C));
}

// qwen3next's DeltaNet tensors, brought to qwen35's conventions at load (facts from llama.cpp's
// qwen3next graph and converter). Its value heads come grouped by key head (value head g r + j,
// r = Hv / Hk, reads key head g: llama.cpp repeats q/k interleaved), while delta_net reads key
// head h % Hk (qwen35's tiled order, which llama.cpp's converter writes for qwen35): every
// per-value-head row, channel and column is permuted to tiled position p = j Hk + g, which
// leaves the layer's output unchanged (heads are independent until ssm_out sums them).
// ssm_ba {C, 2 Hv} holds per key head its r beta rows then its r alpha rows; the legacy fused
// ssm_in {C, per key head [q S, k S, v r S, z r S]} is split into qkv and z the same way.
struct qwen3next_heads {
  int64_t S, Hk, Hv, r;
  int64_t grouped(int64_t p) const { return (p % Hk) * r + p / Hk; }  // source head of tiled p
  // Row indices of the value part (S rows a head) in tiled order, offset by `base`.
  void v_rows(std::vector<int64_t>& out, int64_t base) const {
    for (int64_t p = 0; p < Hv; ++p)
      for (int64_t i = 0; i < S; ++i) out.push_back(base + grouped(p) * S + i);
  }
};

result<void> load_qwen3next_delta_net(loader& ld, const model_config& c, const std::string& p, layer_weights& w) {
  const int64_t C = c.n_embd, S = c.ssm_state, Hk = c.ssm_k_heads, Hv = c.ssm_v_heads, VD = Hv * S;
  const int64_t QK = 2 * Hk * S, Cc = c.ssm_conv_channels();
  const qwen3next_heads hd{S, Hk, Hv, Hv / Hk};
  std::vector<int64_t> qkv_rows, z_rows;  // rows of the in-projection(s), qkv then z
  if (ld.file.has_tensor(p + "ssm_in.weight")) {  // legacy: one {C, Cc + VD} tensor, per key head [q, k, v, z]
    auto in = ld.checked(p + "ssm_in.weight", {C, Cc + VD, 1, 1}, 2);
    if (!in) return fail(std::move(in).error());
    const int64_t blk = 2 * S + 2 * hd.r * S;
    for (int64_t part = 0; part < 2; ++part)  // q of every key head, then k
      for (int64_t g = 0; g < Hk; ++g)
        for (int64_t i = 0; i < S; ++i) qkv_rows.push_back(g * blk + part * S + i);
    for (int64_t q = 0; q < Hv; ++q)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t g = q % Hk, j = q / Hk;
        qkv_rows.push_back(g * blk + 2 * S + j * S + i);
        z_rows.push_back(g * blk + 2 * S + hd.r * S + j * S + i);
      }
    std::vector<int64_t> all = qkv_rows;
    all.insert(all.end(), z_rows.begin(), z_rows.end());
    VKS_TRY(put(w.ssm_in, ld.gathered(p + "ssm_in", *in, all)));
  } else {
    auto qkv = ld.checked(p + "attn_qkv.weight", {C, Cc, 1, 1}, 2);
    if (!qkv) return fail(std::move(qkv).error());
    auto z = ld.checked(p + "attn_gate.weight", {C, VD, 1, 1}, 2);
    if (!z) return fail(std::move(z).error());
    for (int64_t i = 0; i < QK; ++i) qkv_rows.push_back(i);
    hd.v_rows(qkv_rows, QK);
    hd.v_rows(z_rows, 0);
    w.ssm_in.ne = {0, 1, 1, 1};
    VKS_TRY(put(w.ssm_qkv, ld.gathered(p + "attn_qkv.weight", *qkv, qkv_rows)));
    VKS_TRY(put(w.ssm_z, ld.gathered(p + "attn_gate.weight", *z, z_rows)));
  }
  auto ba = ld.checked(p + "ssm_ba.weight", {C, 2 * Hv, 1, 1}, 2);
  if (!ba) return fail(std::move(ba).error());
  std::vector<int64_t> ba_rows;
  for (int64_t half = 0; half < 2; ++half)  // beta rows, then alpha rows, tiled
    for (int64_t q = 0; q < Hv; ++q) ba_rows.push_back((q % Hk) * 2 * hd.r + half * hd.r + q / Hk);
  VKS_TRY(put(w.ssm_ba, ld.gathered(p + "ssm_ba", *ba, ba_rows)));
  // The conv kernel's channels (rows of {Kc, Cc}), dt bias and a: host f32, permuted.
  std::vector<int64_t> conv_rows;
  for (int64_t i = 0; i < QK; ++i) conv_rows.push_back(i);
  hd.v_rows(conv_rows, QK);
  auto f32_rows = [&](const std::string& name, int64_t k, int64_t n, const std::vector<int64_t>& rows) -> result<gpu::tensor> {
    auto t = ld.checked(name, {k, n, 1, 1}, n == 1 ? 1 : 2);
    if (!t) return fail(std::move(t).error());
    const uint64_t rb = gpu::row_bytes(t->type, static_cast<uint64_t>(k));
    if (t->data.size() != rb * static_cast<uint64_t>(n)) return fail(errc::parse, ld.file.path() + ": tensor '" + name + "' byte size does not match its shape");
    std::vector<float> f(static_cast<size_t>(k * n));
    for (int64_t r = 0; r < n; ++r)
      gpu::dequantize_row(t->type, t->data.data() + rb * static_cast<uint64_t>(rows[static_cast<size_t>(r)]), f.data() + r * k, k);
    const auto bytes = std::as_bytes(std::span(f));
    return ld.upload(weight_ref{name, gpu::dtype::f32, {k, n, 1, 1}, n == 1 ? 1 : 2, bytes}, gpu::dtype::f32, bytes);
  };
  VKS_TRY(put(w.ssm_conv, f32_rows(p + "ssm_conv1d.weight", c.ssm_conv_kernel, Cc, conv_rows)));
  for (auto [dst, name] : {std::pair{&w.ssm_dt, "ssm_dt.bias"}, {&w.ssm_a, "ssm_a"}}) {
    auto t = ld.checked(p + name, {Hv, 1, 1, 1}, 1);
    if (!t) return fail(std::move(t).error());
    std::vector<float> f(static_cast<size_t>(Hv)), g(static_cast<size_t>(Hv));
    if (t->data.size() != gpu::row_bytes(t->type, static_cast<uint64_t>(Hv)))
      return fail(errc::parse, ld.file.path() + ": tensor '" + t->name + "' byte size does not match its shape");
    gpu::dequantize_row(t->type, t->data.data(), f.data(), Hv);
    for (int64_t q = 0; q < Hv; ++q) g[static_cast<size_t>(q)] = f[static_cast<size_t>(hd.grouped(q))];
    VKS_TRY(put(*dst, ld.upload(*t, gpu::dtype::f32, std::as_bytes(std::span(g)))));
  }
  VKS_TRY(put(w.ssm_norm, ld.vector(p + "ssm_norm.weight", S)));
  // ssm_out {VD, C}: each row's S-wide column blocks in tiled order (whole quant blocks).
  auto out = ld.checked(p + "ssm_out.weight", {VD, C, 1, 1}, 2);
  if (!out) return fail(std::move(out).error());
  if (S % gpu::traits(out->type).block_elems != 0)
    return fail(errc::unsupported, ld.file.path() + ": qwen3next ssm_out's head width is not a multiple of its type's block size");
  const uint64_t rb = gpu::row_bytes(out->type, static_cast<uint64_t>(VD)), hb = gpu::row_bytes(out->type, static_cast<uint64_t>(S));
  if (out->data.size() != rb * static_cast<uint64_t>(C))
    return fail(errc::parse, ld.file.path() + ": tensor '" + out->name + "' byte size does not match its shape");
  std::vector<std::byte> ob;
  ob.reserve(out->data.size());
  for (int64_t row = 0; row < C; ++row)
    for (int64_t q = 0; q < Hv; ++q) {
      const auto at = out->data.begin() + static_cast<std::ptrdiff_t>(rb * static_cast<uint64_t>(row) + hb * static_cast<uint64_t>(hd.grouped(q)));
      ob.insert(ob.end(), at, at + static_cast<std::ptrdiff_t>(hb));
    }
  return put(w.ssm_out, ld.upload(weight_ref{out->name, out->type, {VD, C, 1, 1}, 2, ob}, out->type, ob));
}

// The sigmoid-gated shared expert of qwen35moe / qwen3next (layer_weights' shexp fields).
result<void> load_shared_expert(loader& ld, const model_config& c, const std::string& p, layer_weights& w) {
  const int64_t C = c.n_embd, Fs = c.n_ff_shexp;
  VKS_TRY(put(w.shexp_gate_inp, ld.vector(p + "ffn_gate_inp_shexp.weight", C)));
  w.shexp_gate_inp = w.shexp_gate_inp.view({C, 1, 1, 1});
  VKS_TRY(put(w.w_gate_up_shexp, ld.stacked(p + "ffn_gate_up_shexp.weight",
                                             {p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight"}, C, {Fs, Fs})));
  if (w.w_gate_up_shexp.ne[0] == 0) {
    VKS_TRY(put(w.w_gate_shexp, ld.matrix(p + "ffn_gate_shexp.weight", C, Fs)));
    VKS_TRY(put(w.w_up_shexp, ld.matrix(p + "ffn_up_shexp.weight", C, Fs)));
  }
  return put(w.w_down_shexp, ld.matrix(p + "ffn_down_shexp.weight", Fs, C));
}

// A qwen35 / qwen35moe / qwen3next layer: gated DeltaNet or gated attention, then the dense
// SwiGLU FFN (qwen35) or the MoE FFN with its shared expert.
result<layer_weights> load_hybrid_layer(loader& ld, const model_config& c, int l) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const int64_t C = c.n_embd, F = c.n_ff, QD = int64_t{c.n_head} * c.head_dim;
  layer_weights w;
  VKS_TRY(put(w.attn_norm, ld.vector(p + "attn_norm.weight", C)));
  VKS_TRY(put(w.ffn_norm, ld.vector(p + "post_attention_norm.weight", C)));
  if (c.is_recurrent_layer(l)) {
    VKS_TRY(c.arch == "qwen3next" ? load_qwen3next_delta_net(ld, c, p, w) : load_delta_net(ld, c, p, w));
  } else {
    VKS_TRY(load_gated_attention(ld, c, p, w));
    VKS_TRY(put(w.q_norm, ld.vector(p + "attn_q_norm.weight", c.head_dim)));
    VKS_TRY(put(w.k_norm, ld.vector(p + "attn_k_norm.weight", c.head_dim)));
    VKS_TRY(put(w.wo, ld.matrix(p + "attn_output.weight", QD, C)));
  }
  w.bqkv.ne = {0, 1, 1, 1};
  if (c.is_moe()) {
    VKS_TRY(load_experts(ld, c, p, w));
    if (c.n_ff_shexp > 0) VKS_TRY(load_shared_expert(ld, c, p, w));
    return w;
  }
  VKS_TRY(put(w.w_gate_up, ld.stacked(p + "ffn_gate_up.weight", {p + "ffn_gate.weight", p + "ffn_up.weight"}, C, {F, F})));
  if (w.w_gate_up.ne[0] == 0) {
    VKS_TRY(put(w.w_gate, ld.matrix(p + "ffn_gate.weight", C, F)));
    VKS_TRY(put(w.w_up, ld.matrix(p + "ffn_up.weight", C, F)));
  }
  VKS_TRY(put(w.w_down, ld.matrix(p + "ffn_down.weight", F, C)));
  w.bqkv.ne = {0, 1, 1, 1};
  return w;
}

// Gemma 4's per-layer extras (layer_weights' contract): per-layer embedding tensors and the
// output scale, read to the host (a {1} vector in any float type).
result<void> load_gemma4_layer(loader& ld, const model_config& c, const std::string& p, layer_weights& w) {
  const int64_t C = c.n_embd, P = c.n_embd_per_layer;
  if (P > 0) {
    auto g = ld.matrix(p + "inp_gate.weight", C, P);
    if (!g) return fail(std::move(g).error());
    auto pr = ld.matrix(p + "proj.weight", P, C);
    if (!pr) return fail(std::move(pr).error());
    auto n = ld.vector(p + "post_norm.weight", C);
    if (!n) return fail(std::move(n).error());
    w.ple_gate = *g;
    w.ple_proj = *pr;
    w.ple_post_norm = *n;
  }
  if (ld.file.has_tensor(p + "layer_output_scale.weight")) {
    auto s = ld.checked(p + "layer_output_scale.weight", {1, 1, 1, 1}, 1);
    if (!s) return fail(std::move(s).error());
    if (s->type == gpu::dtype::f32 && s->data.size() == 4) std::memcpy(&w.out_scale, s->data.data(), 4);
    else gpu::dequantize_row(s->type, s->data.data(), &w.out_scale, 1);
  }
  return ok();
}

// Gemma 4's MoE layer extras (layer_weights' Gemma 4 MoE fields), when the layer has a
// router: llama.cpp's gemma4 tensors. The experts' gate and up stay apart (a fused
// ffn_gate_up_exps {C, 2Fe, E}, expert e's gate rows then its up rows, is split per expert).
result<void> load_gemma4_moe(loader& ld, const model_config& c, const std::string& p, layer_weights& w) {
  if (!ld.file.has_tensor(p + "ffn_gate_inp.weight")) return ok();
  if (!c.is_moe()) return fail(errc::parse, ld.file.path() + ": gemma4 layer with a router (" + p + "ffn_gate_inp) but no expert_count");
  const int64_t C = c.n_embd, E = c.n_expert, Fe = c.n_ff_exp;
  VKS_TRY(put(w.ffn_gate_inp, ld.matrix(p + "ffn_gate_inp.weight", C, E)));
  auto rs = ld.checked(p + "ffn_gate_inp.scale", {C, 1, 1, 1}, 1);
  if (!rs) return fail(std::move(rs).error());
  if (rs->data.size() != gpu::row_bytes(rs->type, static_cast<uint64_t>(C)))
    return fail(errc::parse, ld.file.path() + ": tensor '" + rs->name + "' byte size does not match its shape");
  std::vector<float> g(static_cast<size_t>(C));
  gpu::dequantize_row(rs->type, rs->data.data(), g.data(), C);
  for (auto& v : g) v /= std::sqrt(static_cast<float>(C));
  VKS_TRY(put(w.moe_router_norm, ld.upload(weight_ref{p + "moe_router_norm", gpu::dtype::f32, {C, 1, 1, 1}, 1, {}},
                                           gpu::dtype::f32, std::as_bytes(std::span(g)))));
  VKS_TRY(put(w.ffn_pre_norm_2, ld.vector(p + "pre_ffw_norm_2.weight", C)));
  VKS_TRY(put(w.ffn_post_norm_1, ld.vector(p + "post_ffw_norm_1.weight", C)));
  VKS_TRY(put(w.ffn_post_norm_2, ld.vector(p + "post_ffw_norm_2.weight", C)));
  if (ld.file.has_tensor(p + "ffn_gate_up_exps.weight")) {
    auto gu = ld.checked(p + "ffn_gate_up_exps.weight", {C, 2 * Fe, E, 1}, 3);
    if (!gu) return fail(std::move(gu).error());
    const uint64_t half = gpu::row_bytes(gu->type, static_cast<uint64_t>(C)) * static_cast<uint64_t>(Fe);
    if (gu->data.size() != 2 * half * static_cast<uint64_t>(E))
      return fail(errc::parse, ld.file.path() + ": tensor '" + gu->name + "' byte size does not match its shape");
    std::vector<std::byte> parts[2];
    for (int64_t e = 0; e < E; ++e)
      for (int i = 0; i < 2; ++i) {
        const auto at = gu->data.begin() + static_cast<std::ptrdiff_t>(half * static_cast<uint64_t>(2 * e + i));
        parts[i].insert(parts[i].end(), at, at + static_cast<std::ptrdiff_t>(half));
      }
    VKS_TRY(put(w.w_gate_exps, ld.upload(weight_ref{p + "ffn_gate_exps.weight", gu->type, {C, Fe, E, 1}, 3, parts[0]}, gu->type, parts[0])));
    VKS_TRY(put(w.w_up_exps, ld.upload(weight_ref{p + "ffn_up_exps.weight", gu->type, {C, Fe, E, 1}, 3, parts[1]}, gu->type, parts[1])));
  } else {
    VKS_TRY(put(w.w_gate_exps, ld.experts(p + "ffn_gate_exps.weight", C, Fe, E)));
    VKS_TRY(put(w.w_up_exps, ld.experts(p + "ffn_up_exps.weight", C, Fe, E)));
  }
  VKS_TRY(put(w.w_down_exps, ld.experts(p + "ffn_down_exps.weight", Fe, C, E)));
  if (ld.file.has_tensor(p + "ffn_down_exps.scale")) {
    VKS_TRY(put(w.expert_scale, ld.vector(p + "ffn_down_exps.scale", E)));
    w.expert_scale = w.expert_scale.view({1, E, 1, 1});
  }
  w.g4_moe = true;
  return ok();
}

result<layer_weights> load_layer(loader& ld, const model_config& c, int l) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const int64_t C = c.n_embd, QD = c.layer_q_width(l), KD = c.layer_kv_width(c.kv_source_layer(l)), F = c.layer_n_ff(l);
  const int64_t D = c.layer_head_dim(l);
  layer_weights w;
  auto vec = [&](gpu::tensor& dst, const char* n, int64_t len) -> result<void> {
    auto t = ld.vector(p + n, len);
    if (!t) return fail(std::move(t).error());
    dst = *t;
    return ok();
  };
  auto mat = [&](gpu::tensor& dst, const char* n, int64_t k, int64_t m) -> result<void> {
    auto t = ld.matrix(p + n, k, m);
    if (!t) return fail(std::move(t).error());
    dst = *t;
    return ok();
  };
  auto stack = [&](gpu::tensor& dst, const char* n, std::vector<const char*> names, std::vector<int64_t> ns) -> result<void> {
    std::vector<std::string> full;
    for (auto* x : names) full.push_back(p + x);
    auto t = ld.stacked(p + n, full, C, ns);
    if (!t) return fail(std::move(t).error());
    dst = *t;
    return ok();
  };
  VKS_TRY(vec(w.attn_norm, "attn_norm.weight", C));
  const bool g4_special = c.arch == "gemma4" && (c.kv_source_layer(l) != l || !ld.file.has_tensor(p + "attn_v.weight"));
  if (g4_special) {  // KV-shared (q only) or V = K's projection: separate matmuls
    VKS_TRY(mat(w.wq, "attn_q.weight", C, QD));
    w.wqkv.ne = {0, 1, 1, 1};
    if (c.kv_source_layer(l) == l) {
      VKS_TRY(mat(w.wk, "attn_k.weight", C, KD));
      w.wv = w.wk;
    }
  } else if (c.fused_qkv) {  // the file's own fused tensor (phi3) is the stack: {C, QD + 2 KD}
    VKS_TRY(mat(w.wqkv, "attn_qkv.weight", C, QD + 2 * KD));
  } else {
    VKS_TRY(stack(w.wqkv, "attn_qkv.weight", {"attn_q.weight", "attn_k.weight", "attn_v.weight"}, {QD, KD, KD}));
  }
  if (w.wqkv.ne[0] == 0 && !g4_special) {  // types differ: three matmuls
    VKS_TRY(mat(w.wq, "attn_q.weight", C, QD));
    VKS_TRY(mat(w.wk, "attn_k.weight", C, KD));
    VKS_TRY(mat(w.wv, "attn_v.weight", C, KD));
  }
  w.bqkv.ne = {0, 1, 1, 1};
  if (c.qkv_bias) {
    auto b = ld.stacked_vectors(p + "attn_qkv.bias", {p + "attn_q.bias", p + "attn_k.bias", p + "attn_v.bias"}, {QD, KD, KD});
    if (!b) return fail(std::move(b).error());
    w.bqkv = *b;
    const auto whole = w.bqkv.view({1, QD + 2 * KD, 1, 1});  // views of the stack, for separate matmuls
    w.bq = whole.rows(0, QD).view({QD, 1, 1, 1});
    w.bk = whole.rows(QD, KD).view({KD, 1, 1, 1});
    w.bv = whole.rows(QD + KD, KD).view({KD, 1, 1, 1});
  }
  if (c.qk_norm) {
    VKS_TRY(vec(w.q_norm, "attn_q_norm.weight", D));
    if (c.kv_source_layer(l) == l) VKS_TRY(vec(w.k_norm, "attn_k_norm.weight", D));
  }
  if (c.arch == "gemma4") VKS_TRY(load_gemma4_layer(ld, c, p, w));
  VKS_TRY(mat(w.wo, "attn_output.weight", QD, C));
  VKS_TRY(vec(w.ffn_norm, c.arch == "gpt-oss" ? "post_attention_norm.weight" : "ffn_norm.weight", C));
  if (c.attn_out_bias) VKS_TRY(vec(w.bo, "attn_output.bias", C));
  if (c.attn_sinks) VKS_TRY(vec(w.attn_sinks, "attn_sinks.weight", c.n_head));
  if (c.post_norms) {
    VKS_TRY(vec(w.attn_post_norm, "post_attention_norm.weight", C));
    VKS_TRY(vec(w.ffn_post_norm, "post_ffw_norm.weight", C));
  }
  if (c.is_moe() && c.arch != "gemma4") {  // gemma4's MoE layers keep the dense FFN too
    VKS_TRY(load_experts(ld, c, p, w));
    return w;
  }
  if (c.arch == "gemma4") VKS_TRY(load_gemma4_moe(ld, c, p, w));
  if (c.fused_gate_up) {  // phi3's ffn_up {C, 2F}: gate rows first, then up (the stack's order)
    VKS_TRY(mat(w.w_gate_up, "ffn_up.weight", C, 2 * F));
  } else {
    VKS_TRY(stack(w.w_gate_up, "ffn_gate_up.weight", {"ffn_gate.weight", "ffn_up.weight"}, {F, F}));
  }
  if (w.w_gate_up.ne[0] == 0) {
    VKS_TRY(mat(w.w_gate, "ffn_gate.weight", C, F));
    VKS_TRY(mat(w.w_up, "ffn_up.weight", C, F));
  }
  VKS_TRY(mat(w.w_down, "ffn_down.weight", F, C));
  return w;
}

// Gemma 4's model-level tensors: the ones vector of V's weightless norm and the per-layer
// embedding tables (model_weights' contract).
result<void> load_gemma4_model(loader& ld, const model_config& c, gpu::backend& be, model_weights& mw) {
  const std::vector<float> ones(static_cast<size_t>(c.max_head_dim()), 1.f);  // each layer views its head's prefix
  auto t = be.alloc(gpu::dtype::f32, {c.max_head_dim(), 1, 1, 1}, "v_norm_ones");
  if (!t) return fail(std::move(t).error());
  VKS_TRY(be.upload(*t, std::as_bytes(std::span(ones))));
  mw.ple_v_norm_ones = *t;
  const int64_t C = c.n_embd, LP = int64_t{c.n_layer} * c.n_embd_per_layer;
  if (c.n_embd_per_layer == 0) return ok();
  auto e = ld.matrix("per_layer_token_embd.weight", LP, c.n_vocab);
  if (!e) return fail(std::move(e).error());
  if (c.n_embd_per_layer % gpu::traits(e->type).block_elems != 0)  // read as {P, L*V} rows
    return fail(errc::unsupported, ld.file.path() + ": per_layer_token_embd's type blocks straddle its per-layer rows of " +
                                       std::to_string(c.n_embd_per_layer));
  auto pr = ld.matrix("per_layer_model_proj.weight", C, LP);
  if (!pr) return fail(std::move(pr).error());
  auto n = ld.vector("per_layer_proj_norm.weight", c.n_embd_per_layer);
  if (!n) return fail(std::move(n).error());
  mw.ple_tok_embd = *e;
  mw.ple_model_proj = *pr;
  mw.ple_proj_norm = *n;
  return ok();
}

}  // namespace

result<model_weights> load_weights(const model_file& file, gpu::backend& be, int ctx_per_seq) {
  if (!file.has_weights()) return fail(errc::invalid_argument, file.path() + ": file has no weights (vocab only)");
  const auto& c = file.config();
  loader ld{file, be};
  // Gemma 2/3's HF norms hold w of x * (1 + w); Gemma 4's hold the weight itself.
  if (file.format() == model_format::safetensors && c.post_norms && c.arch != "gemma4") ld.norm_offset = 1.f;
  model_weights mw;
  auto emb = ld.matrix("token_embd.weight", c.n_embd, c.n_vocab);
  if (!emb) return fail(std::move(emb).error());
  mw.tok_embd = *emb;
  auto norm = ld.vector("output_norm.weight", c.n_embd);
  if (!norm) return fail(std::move(norm).error());
  mw.output_norm = *norm;
  if (c.tied_embeddings && !file.has_tensor("output.weight")) {
    mw.output = mw.tok_embd;
  } else {
    auto out = ld.matrix("output.weight", c.n_embd, c.n_vocab);
    if (!out) return fail(std::move(out).error());
    mw.output = *out;
  }
  mw.rope_freqs.ne = {0, 1, 1, 1};
  // llama.cpp's order: rope_freqs, else LongRoPE's long factors when one sequence's context
  // exceeds the original one, else its short factors (a missing one: no factors).
  const int orig = c.rope_scaling.original_context > 0 ? c.rope_scaling.original_context : c.n_ctx;
  const char* longrope = (ctx_per_seq > 0 ? ctx_per_seq : c.n_ctx) > orig ? "rope_factors_long.weight"
                                                                         : "rope_factors_short.weight";
  if (file.has_tensor("rope_freqs.weight") || (c.longrope && file.has_tensor(longrope))) {
    const char* name = file.has_tensor("rope_freqs.weight") ? "rope_freqs.weight" : longrope;
    auto f = ld.vector(name, c.rope.n_dims / 2);
    if (!f) return fail(std::move(f).error());
    mw.rope_freqs = *f;
  } else if (c.rope_llama3.enabled) {
    auto factors = llama3_freq_factors(c);
    auto t = be.alloc(gpu::dtype::f32, {static_cast<int64_t>(factors.size()), 1, 1, 1}, "rope_freqs.weight");
    if (!t) return fail(std::move(t).error());
    VKS_TRY(be.upload(*t, std::as_bytes(std::span(factors))));
    mw.rope_freqs = *t;
  }
  if (c.v_norm) VKS_TRY(load_gemma4_model(ld, c, be, mw));
  for (int l = 0; l < c.n_layer; ++l) {
    auto lw = c.is_hybrid() ? load_hybrid_layer(ld, c, l) : load_layer(ld, c, l);
    if (!lw) return fail(std::move(lw).error());
    lw->v_norm = mw.ple_v_norm_ones;
    if (c.v_norm) lw->v_norm.ne = {c.layer_head_dim(l), 1, 1, 1};  // a prefix of the ones vector
    mw.layers.push_back(*lw);
  }
  mw.n_bytes = ld.n_bytes;
  return mw;
}

}  // namespace vks::model
