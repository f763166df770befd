// Weight validation and upload: expected shapes per tensor from the config, host-side
// conversion of 1-D tensors to f32, one backend allocation + upload per tensor.
#include "model/weights.hpp"

#include <cstring>

#include "gpu/quant.hpp"

namespace vks::model {
namespace {

std::string shape_str(const std::array<int64_t, 4>& ne, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "}";
}

struct loader {
  const model_file& file;
  gpu::backend& be;
  uint64_t n_bytes = 0;

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

  // A fused matrix {k, sum of parts' rows} split into one tensor per part (rows in order):
  // GGUF rows are whole blocks, so each part is a byte range of the stored tensor.
  result<void> split_matrix(const std::string& name, int64_t k, std::initializer_list<std::pair<gpu::tensor*, int64_t>> parts) {
    int64_t n = 0;
    for (auto& p : parts) n += p.second;
    auto w = checked(name, {k, n, 1, 1}, 2);
    if (!w) return fail(std::move(w).error());
    const uint64_t rb = gpu::row_bytes(w->type, static_cast<uint64_t>(k));
    if (w->data.size() != rb * static_cast<uint64_t>(n))
      return fail(errc::parse, file.path() + ": tensor '" + name + "' byte size does not match its shape");
    uint64_t at = 0;
    for (auto& [dst, rows] : parts) {
      weight_ref part = *w;
      part.ne = {k, rows, 1, 1};
      auto t = upload(part, w->type, w->data.subspan(at, rb * static_cast<uint64_t>(rows)));
      if (!t) return fail(std::move(t).error());
      *dst = *t;
      at += rb * static_cast<uint64_t>(rows);
    }
    return ok();
  }

  // A vector {n}, converted to f32.
  result<gpu::tensor> vector(const std::string& name, int64_t n) {
    auto w = checked(name, {n, 1, 1, 1}, 1);
    if (!w) return fail(std::move(w).error());
    std::vector<float> f(static_cast<size_t>(n));
    if (w->type == gpu::dtype::f32) std::memcpy(f.data(), w->data.data(), f.size() * 4);
    else gpu::dequantize_row(w->type, w->data.data(), f.data(), n);
    return upload(*w, gpu::dtype::f32, std::as_bytes(std::span(f)));
  }
};

result<layer_weights> load_layer(loader& ld, const model_config& c, int l) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const int64_t C = c.n_embd, QD = int64_t{c.n_head} * c.head_dim, KD = int64_t{c.n_head_kv} * c.head_dim, F = c.n_ff;
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
  VKS_TRY(vec(w.attn_norm, "attn_norm.weight", C));
  if (c.fused_qkv) {
    VKS_TRY(ld.split_matrix(p + "attn_qkv.weight", C, {{&w.wq, QD}, {&w.wk, KD}, {&w.wv, KD}}));
  } else {
    VKS_TRY(mat(w.wq, "attn_q.weight", C, QD));
    VKS_TRY(mat(w.wk, "attn_k.weight", C, KD));
    VKS_TRY(mat(w.wv, "attn_v.weight", C, KD));
  }
  if (c.qkv_bias) {
    VKS_TRY(vec(w.bq, "attn_q.bias", QD));
    VKS_TRY(vec(w.bk, "attn_k.bias", KD));
    VKS_TRY(vec(w.bv, "attn_v.bias", KD));
  }
  if (c.qk_norm) {
    VKS_TRY(vec(w.q_norm, "attn_q_norm.weight", c.head_dim));
    VKS_TRY(vec(w.k_norm, "attn_k_norm.weight", c.head_dim));
  }
  VKS_TRY(mat(w.wo, "attn_output.weight", QD, C));
  VKS_TRY(vec(w.ffn_norm, "ffn_norm.weight", C));
  if (c.post_norms) {
    VKS_TRY(vec(w.attn_post_norm, "post_attention_norm.weight", C));
    VKS_TRY(vec(w.ffn_post_norm, "post_ffw_norm.weight", C));
  }
  if (c.fused_gate_up) {
    VKS_TRY(ld.split_matrix(p + "ffn_up.weight", C, {{&w.w_gate, F}, {&w.w_up, F}}));
  } else {
    VKS_TRY(mat(w.w_gate, "ffn_gate.weight", C, F));
    VKS_TRY(mat(w.w_up, "ffn_up.weight", C, F));
  }
  VKS_TRY(mat(w.w_down, "ffn_down.weight", F, C));
  return w;
}

}  // namespace

result<model_weights> load_weights(const model_file& file, gpu::backend& be) {
  if (!file.has_weights()) return fail(errc::invalid_argument, file.path() + ": file has no weights (vocab only)");
  const auto& c = file.config();
  loader ld{file, be};
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
  if (file.has_tensor("rope_freqs.weight")) {
    auto f = ld.vector("rope_freqs.weight", c.rope.n_dims / 2);
    if (!f) return fail(std::move(f).error());
    mw.rope_freqs = *f;
  } else if (c.rope_llama3.enabled) {
    auto factors = llama3_freq_factors(c);
    auto t = be.alloc(gpu::dtype::f32, {static_cast<int64_t>(factors.size()), 1, 1, 1}, "rope_freqs.weight");
    if (!t) return fail(std::move(t).error());
    VKS_TRY(be.upload(*t, std::as_bytes(std::span(factors))));
    mw.rope_freqs = *t;
  }
  for (int l = 0; l < c.n_layer; ++l) {
    auto lw = load_layer(ld, c, l);
    if (!lw) return fail(std::move(lw).error());
    mw.layers.push_back(*lw);
  }
  mw.n_bytes = ld.n_bytes;
  return mw;
}

}  // namespace vks::model
