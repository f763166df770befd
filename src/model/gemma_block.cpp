// The Gemma 2/3 layer (contract in gemma_block.hpp), on the shared block ops' pieces.
#include "model/gemma_block.hpp"

#include "model/block_ops.hpp"

namespace vks::model {

void record_gemma_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                        const step_views& s) {
  const int64_t T = s.n_tokens, D = c.head_dim;
  const bool swa = c.is_swa_layer(s.layer);
  record_qkv(be, c, w, s);
  gpu::tensor q = s.q, k = s.k;
  if (c.qk_norm) {  // rows of D: one per (head, token)
    be.rms_norm(s.qn.view({D, int64_t{c.n_head} * T, 1, 1}), s.q.view({D, int64_t{c.n_head} * T, 1, 1}), w.q_norm, c.rms_eps);
    be.rms_norm(s.kn.view({D, int64_t{c.n_head_kv} * T, 1, 1}), s.k.view({D, int64_t{c.n_head_kv} * T, 1, 1}), w.k_norm,
                c.rms_eps);
    q = s.qn;
    k = s.kn;
  }
  gpu::rope_params rp = c.rope;
  if (swa && c.rope_freq_base_swa > 0.f) {
    rp.freq_base = c.rope_freq_base_swa;
    rp.freq_scale = 1.f;
  }
  be.rope(q.view({D, c.n_head, T, 1}), s.pos, rp, s.rope_freqs);
  be.rope(k.view({D, c.n_head_kv, T, 1}), s.pos, rp, s.rope_freqs);
  be.kv_store(kv.k, kv.v, k, s.v, s.slots);
  gpu::attention_params ap = s.attn;
  ap.window = swa ? c.sliding_window : 0;
  ap.softcap = c.attn_softcap;
  be.attention(s.att, q, kv.k, kv.v, s.block_table, s.seq, s.pos, ap);
  be.matmul(s.o, w.wo, s.att);
  be.rms_norm(s.o, s.o, w.attn_post_norm, c.rms_eps);
  be.add_rms_norm(s.x, s.o, s.h, w.ffn_norm, c.rms_eps);
  record_gemma_ffn(be, c, w, s);
  if (s.next_attn_norm) be.add_rms_norm(s.x, s.o, s.h, *s.next_attn_norm, c.rms_eps);
  else be.add(s.x, s.x, s.o);
}

void record_gemma_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s) {
  record_gemma_ffn(be, c, w, s, w.ffn_post_norm);
}

void record_gemma_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s,
                      const gpu::tensor& post_norm) {
  if (w.w_gate_up.ne[0] > 0) {  // stacked at load (model/weights): one matmul, split outputs
    const gpu::tensor ys[] = {s.gate, s.up};
    gpu::tensor no_bias;
    no_bias.ne = {0, 1, 1, 1};
    be.matmul_split(ys, w.w_gate_up, s.h, no_bias);
  } else {
    be.matmul(s.gate, w.w_gate, s.h);
    be.matmul(s.up, w.w_up, s.h);
  }
  be.gelu_mul(s.gate, s.gate, s.up);
  be.matmul(s.o, w.w_down, s.gate);
  be.rms_norm(s.o, s.o, post_norm, c.rms_eps);
}

}  // namespace vks::model
