// The Gemma 4 decoder layer (llama.cpp's gemma4 graph, text layers): pre-norm
// attention with per-head q/k norms and a weightless V norm, the sliding layers' own rope
// base and dimensions, the global layers' rope divided by rope_freqs (proportional rope),
// scale 1; KV-shared layers attend over an earlier layer's cache (the runner passes it) and
// store nothing; post-attention norm and residual; gelu-tanh FFN at the layer's own width
// with post-FFN norm and residual (MoE layers: gemma4_moe.hpp); then the per-layer embedding
// block and the layer's output scale.
#include "model/gemma4.hpp"

#include <cmath>

#include "base/assert.hpp"
#include "model/gemma4_moe.hpp"
#include "model/gemma_block.hpp"

namespace vks::model {

namespace {

gpu::tensor empty_tensor() {
  gpu::tensor t;
  t.ne = {0, 1, 1, 1};
  return t;
}

// Rows of D: one per (head, token).
gpu::tensor heads(const gpu::tensor& t, int64_t D, int64_t n) { return t.view({D, n, 1, 1}); }

// The first width * T elements of scratch t {>= width, T} as {width, T}: the layer's own
// row width when its heads are narrower than the widest layer's (per-layer head shapes).
gpu::tensor narrow(const gpu::tensor& t, int64_t width) {
  gpu::tensor r = t;
  r.ne = {width, t.ne[1], 1, 1};
  VKS_ASSERT(width <= t.ne[0], "gemma4: a layer's rows wider than the scratch");
  return r;
}

// Attention sub-block up to s.x += post_norm(o) and s.h = rms_norm(s.x) * ffn_norm. The
// layer's own head shape: D = layer_head_dim (sliding and global layers differ), Hkv its KV
// source's count (a KV-shared layer attends over an earlier layer of its kind); q, k, v and
// the attention output use the first rows of the scratch (sized for the widest layer).
void record_gemma4_attention(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                             const step_views& s0) {
  const int src = c.kv_source_layer(s0.layer);
  const int64_t T = s0.n_tokens, D = c.layer_head_dim(s0.layer), H = c.n_head, Hkv = c.layer_n_head_kv(src);
  const bool swa = c.is_swa_layer(s0.layer), owns_kv = src == s0.layer;
  step_views s = s0;
  s.q = narrow(s0.q, H * D), s.qn = narrow(s0.qn, H * D), s.att = narrow(s0.att, H * D);
  s.k = narrow(s0.k, Hkv * D), s.kn = narrow(s0.kn, Hkv * D), s.v = narrow(s0.v, Hkv * D);
  if (!s.h_ready) be.rms_norm(s.h, s.x, w.attn_norm, c.rms_eps);
  // attention_k_eq_v (no attn_v): V is K's projection, normed below without K's weight.
  const bool v_is_k = owns_kv && w.wqkv.ne[0] == 0 && w.wv.buf == w.wk.buf && w.wv.offset == w.wk.offset;
  if (w.wqkv.ne[0] > 0) {
    const gpu::tensor ys[] = {s.q, s.k, s.v};
    be.matmul_split(ys, w.wqkv, s.h, empty_tensor());
  } else {
    be.matmul(s.q, w.wq, s.h);
    if (owns_kv) be.matmul(s.k, w.wk, s.h);
    if (owns_kv && !v_is_k) be.matmul(s.v, w.wv, s.h);
  }
  be.rms_norm(heads(s.qn, D, H * T), heads(s.q, D, H * T), w.q_norm, c.rms_eps);
  gpu::rope_params rp = c.rope;
  gpu::tensor factors = s.rope_freqs;
  if (swa) {
    rp.freq_base = c.rope_freq_base_swa;
    rp.freq_scale = 1.f;
    if (c.rope_n_dims_swa > 0) rp.n_dims = c.rope_n_dims_swa;
    factors = empty_tensor();
  }
  be.rope(s.qn.view({D, H, T, 1}), s.pos, rp, factors);
  if (owns_kv) {
    be.rms_norm(heads(s.v, D, Hkv * T), heads(v_is_k ? s.k : s.v, D, Hkv * T), w.v_norm, c.rms_eps);
    be.rms_norm(heads(s.kn, D, Hkv * T), heads(s.k, D, Hkv * T), w.k_norm, c.rms_eps);
    be.rope(s.kn.view({D, Hkv, T, 1}), s.pos, rp, factors);
    be.kv_store(kv.k, kv.v, s.kn, s.v, s.slots);
  }
  gpu::attention_params ap = s.attn;
  ap.n_kv_head = static_cast<int>(Hkv);
  ap.head_dim = static_cast<int>(D);
  ap.window = swa ? c.sliding_window : 0;
  ap.softcap = 0.f;
  be.attention(s.att, s.qn, kv.k, kv.v, s.block_table, s.seq, s.pos, ap);
  be.matmul(s.o, w.wo, s.att);
  be.rms_norm(s.o, s.o, w.attn_post_norm, c.rms_eps);
  be.add_rms_norm(s.x, s.o, s.h, w.ffn_norm, c.rms_eps);
}

void record_gemma4_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                         const step_views& s) {
  record_gemma4_attention(be, c, w, kv, s);
  step_views sf = s;  // the FFN at the layer's own width (E2B/E4B: the KV-shared layers' is wider)
  sf.gate = narrow(s.gate, c.layer_n_ff(s.layer)), sf.up = narrow(s.up, c.layer_n_ff(s.layer));
  if (w.g4_moe) record_gemma4_moe_ffn(be, c, w, sf);  // 26B-A4B: dense FFN and experts side by side
  else record_gemma_ffn(be, c, w, sf);
  be.add(s.x, s.x, s.o);
  if (c.n_embd_per_layer > 0) {  // x += post_norm(proj(gelu(inp_gate . x) * ple_l))
    const int64_t T = s.n_tokens;
    be.matmul(s.ple_gate, w.ple_gate, s.x);
    be.gelu_mul(s.ple_gate, s.ple_gate, s.ple.rows(int64_t{s.layer} * T, T));
    be.matmul(s.o, w.ple_proj, s.ple_gate);
    be.rms_norm(s.o, s.o, w.ple_post_norm, c.rms_eps);
    be.add(s.x, s.x, s.o);
  }
  if (w.out_scale != 1.f) be.scale(s.x, s.x, w.out_scale);
  if (s.next_attn_norm) be.rms_norm(s.h, s.x, *s.next_attn_norm, c.rms_eps);
}

}  // namespace

const architecture arch_gemma4{"gemma4", &record_gemma4_layer};

void record_per_layer_inputs(gpu::backend& be, const model_config& c, const model_weights& mw, const step_views& s,
                             const gpu::tensor& idx, const gpu::tensor& tmp) {
  const int64_t P = c.n_embd_per_layer, L = c.n_layer, T = s.n_tokens, C = c.n_embd;
  const gpu::tensor ple = s.ple, proj = tmp;
  be.get_rows(ple, mw.ple_tok_embd.view({P, L * c.n_vocab, 1, 1}), idx);
  be.scale(ple, ple, std::sqrt(static_cast<float>(P)));
  const gpu::tensor wp = mw.ple_model_proj;
  for (int64_t l = 0; l < L; ++l) be.matmul(proj.rows(l * T, T), wp.rows(l * P, P), s.x);
  be.scale(proj, proj, 1.f / std::sqrt(static_cast<float>(C)));
  be.rms_norm(proj, proj, mw.ple_proj_norm, c.rms_eps);
  be.add(ple, ple, proj);
  be.scale(ple, ple, 1.f / std::sqrt(2.f));
}

std::vector<int32_t> per_layer_input_rows(const model_config& c, std::span<const int32_t> tokens) {
  const auto L = static_cast<size_t>(c.n_layer), T = tokens.size();
  std::vector<int32_t> idx(L * T);
  for (size_t l = 0; l < L; ++l)
    for (size_t t = 0; t < T; ++t) idx[l * T + t] = tokens[t] * static_cast<int32_t>(L) + static_cast<int32_t>(l);
  return idx;
}

}  // namespace vks::model
