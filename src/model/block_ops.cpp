// Shared decoder sub-blocks: QKV projection, RoPE + paged attention, SwiGLU FFN.
#include "model/block_ops.hpp"

namespace vks::model {

void record_qkv(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s) {
  if (!s.h_ready) be.rms_norm(s.h, s.x, w.attn_norm, c.rms_eps);
  be.matmul(s.q, w.wq, s.h);
  be.matmul(s.k, w.wk, s.h);
  be.matmul(s.v, w.wv, s.h);
}

void record_attention(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                      const step_views& s, const gpu::tensor& q, const gpu::tensor& k, bool rope) {
  const int64_t T = s.n_tokens, D = c.head_dim;
  if (rope) {
    be.rope(q.view({D, c.n_head, T, 1}), s.pos, c.rope, s.rope_freqs);
    be.rope(k.view({D, c.n_head_kv, T, 1}), s.pos, c.rope, s.rope_freqs);
  }
  be.kv_store(kv.k, kv.v, k, s.v, s.slots);
  be.attention(s.att, q, kv.k, kv.v, s.block_table, s.seq, s.pos, s.attn);
  be.matmul(s.o, w.wo, s.att);
  be.add_rms_norm(s.x, s.o, s.h, w.ffn_norm, c.rms_eps);
}

void record_swiglu_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s) {
  be.matmul(s.gate, w.w_gate, s.h);
  be.matmul(s.up, w.w_up, s.h);
  be.silu_mul(s.gate, s.gate, s.up);
  be.matmul(s.o, w.w_down, s.gate);
  if (s.next_attn_norm) be.add_rms_norm(s.x, s.o, s.h, *s.next_attn_norm, c.rms_eps);
  else be.add(s.x, s.x, s.o);
}

}  // namespace vks::model
