// Shared decoder sub-blocks: QKV projection, RoPE + paged attention, SwiGLU FFN. Stacked
// weights (model/weights) go through the backend's fused ops (matmul_split, matmul_swiglu,
// rope_kv_store; on backends that fuse norms into matmuls, norm_matmul_* and matmul_add),
// whose defaults are the separate ops.
#include "model/block_ops.hpp"

namespace vks::model {
namespace {

gpu::tensor none() {
  gpu::tensor t;
  t.ne = {0, 1, 1, 1};
  return t;
}

}  // namespace

void record_qkv(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s) {
  const gpu::tensor bias = c.qkv_bias ? w.bqkv : none();
  const bool fused = be.fuses_norm_into_matmul();  // x is the only input: s.h_ready is not used
  if (fused && w.wqkv.ne[0] > 0) {
    const gpu::tensor ys[] = {s.q, s.k, s.v};
    be.norm_matmul_split(ys, w.wqkv, s.x, w.attn_norm, c.rms_eps, bias, s.h);
    return;
  }
  if (fused || !s.h_ready) be.rms_norm(s.h, s.x, w.attn_norm, c.rms_eps);
  if (w.wqkv.ne[0] > 0) {
    const gpu::tensor ys[] = {s.q, s.k, s.v};
    be.matmul_split(ys, w.wqkv, s.h, bias);
    return;
  }
  be.matmul(s.q, w.wq, s.h);
  be.matmul(s.k, w.wk, s.h);
  be.matmul(s.v, w.wv, s.h);
  if (c.qkv_bias) {  // b {n} broadcast over T rows
    be.add(s.q, s.q, w.bq);
    be.add(s.k, s.k, w.bk);
    be.add(s.v, s.v, w.bv);
  }
}

void record_attention(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                      const step_views& s, bool rope, bool ffn_norms_x) {
  const gpu::tensor qn = c.qk_norm ? w.q_norm : none(), kn = c.qk_norm ? w.k_norm : none();
  if (rope) {
    be.rope_kv_store(s.q, s.k, s.v, kv.k, kv.v, s.pos, s.slots, c.head_dim, c.rope, s.rope_freqs, qn, kn, c.rms_eps);
  } else {  // no rotation (smollm3's no-rope layers): q/k norms, if any, then the cache write
    const int64_t T = s.n_tokens, D = c.head_dim;
    if (c.qk_norm) {
      be.rms_norm(s.q.view({D, int64_t{c.n_head} * T, 1, 1}), s.q.view({D, int64_t{c.n_head} * T, 1, 1}), qn, c.rms_eps);
      be.rms_norm(s.k.view({D, int64_t{c.n_head_kv} * T, 1, 1}), s.k.view({D, int64_t{c.n_head_kv} * T, 1, 1}), kn, c.rms_eps);
    }
    be.kv_store(kv.k, kv.v, s.k, s.v, s.slots);
  }
  be.attention(s.att, s.q, kv.k, kv.v, s.block_table, s.seq, s.pos, s.attn);
  if (be.fuses_norm_into_matmul()) {  // x += att . wo^T in one op
    be.matmul_add(s.x, w.wo, s.att, s.o);
    if (!ffn_norms_x) be.rms_norm(s.h, s.x, w.ffn_norm, c.rms_eps);
    return;
  }
  be.matmul(s.o, w.wo, s.att);
  be.add_rms_norm(s.x, s.o, s.h, w.ffn_norm, c.rms_eps);
}

void record_gate_up_silu(gpu::backend& be, const gpu::tensor& act, const gpu::tensor& up, const gpu::tensor& w_gate_up,
                         const gpu::tensor& w_gate, const gpu::tensor& w_up, const gpu::tensor& x) {
  if (w_gate_up.ne[0] > 0) {
    be.matmul_swiglu(act, w_gate_up, x, up);
  } else {
    be.matmul(act, w_gate, x);
    be.matmul(up, w_up, x);
    be.silu_mul(act, act, up);
  }
}

void record_swiglu_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s) {
  if (be.fuses_norm_into_matmul()) {  // the FFN norm in gate/up, the residual add in down
    if (w.w_gate_up.ne[0] > 0) {
      be.norm_matmul_swiglu(s.gate, w.w_gate_up, s.x, w.ffn_norm, c.rms_eps, s.h, s.up);
    } else {
      be.rms_norm(s.h, s.x, w.ffn_norm, c.rms_eps);
      be.matmul(s.gate, w.w_gate, s.h);
      be.matmul(s.up, w.w_up, s.h);
      be.silu_mul(s.gate, s.gate, s.up);
    }
    be.matmul_add(s.x, w.w_down, s.gate, s.o);
    return;
  }
  record_gate_up_silu(be, s.gate, s.up, w.w_gate_up, w.w_gate, w.w_up, s.h);
  be.matmul(s.o, w.w_down, s.gate);
  if (s.next_attn_norm) be.add_rms_norm(s.x, s.o, s.h, *s.next_attn_norm, c.rms_eps);
  else be.add(s.x, s.x, s.o);
}

}  // namespace vks::model
