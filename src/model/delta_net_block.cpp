// Gated DeltaNet and gated attention layers (qwen35): the op order is llama.cpp's qwen35 graph
// (facts only; see delta_net_block.hpp).
#include "model/delta_net_block.hpp"

#include "model/block_ops.hpp"

namespace vks::model {
namespace {

gpu::tensor none() {
  gpu::tensor t;
  t.ne = {0, 1, 1, 1};
  return t;
}

// x += in . w_out^T, then s.h = rms_norm(x) * ffn_norm (fusing backends: the FFN norms x
// inside its gate/up matmul, as record_swiglu_ffn expects there).
void record_out_residual(gpu::backend& be, const model_config& c, const layer_weights& w, const gpu::tensor& w_out,
                         const gpu::tensor& in, const step_views& s) {
  if (be.fuses_norm_into_matmul()) {
    be.matmul_add(s.x, w_out, in, s.o);
    return;
  }
  be.matmul(s.o, w_out, in);
  be.add_rms_norm(s.x, s.o, s.h, w.ffn_norm, c.rms_eps);
}

// Two projections of s.h from a stacked weight, or from two separate ones.
void project2(gpu::backend& be, const gpu::tensor& stacked, const gpu::tensor& w0, const gpu::tensor& w1,
              const gpu::tensor& y0, const gpu::tensor& y1, const gpu::tensor& h) {
  if (stacked.ne[0] > 0) {
    const gpu::tensor ys[] = {y0, y1};
    be.matmul_split(ys, stacked, h, none());
    return;
  }
  be.matmul(y0, w0, h);
  be.matmul(y1, w1, h);
}

}  // namespace

void record_delta_net(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s) {
  const int64_t T = s.n_tokens, S = c.ssm_state, Hv = c.ssm_v_heads;
  if (be.fuses_norm_into_matmul() || !s.h_ready) be.rms_norm(s.h, s.x, w.attn_norm, c.rms_eps);
  project2(be, w.ssm_in, w.ssm_qkv, w.ssm_z, s.ssm_x, s.ssm_z, s.h);
  project2(be, w.ssm_ba, w.ssm_beta, w.ssm_alpha, s.ssm_beta, s.ssm_alpha, s.h);
  be.ssm_conv(s.ssm_c, s.ssm_x, w.ssm_conv, s.state.conv, s.seq_info);
  be.delta_net(s.ssm_o, s.ssm_c, s.ssm_beta, s.ssm_alpha, w.ssm_dt, w.ssm_a, s.state.ssm, s.seq_info,
               {c.ssm_k_heads, c.ssm_v_heads, c.ssm_state, c.rms_eps});
  const gpu::tensor heads = s.ssm_o.view({S, Hv * T, 1, 1});  // the gated norm, per value head
  be.rms_norm(heads, heads, w.ssm_norm, c.rms_eps);
  be.silu_mul(s.ssm_o, s.ssm_z, s.ssm_o);
  record_out_residual(be, c, w, w.ssm_out, s.ssm_o, s);
}

void record_gated_attention(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                            const step_views& s) {
  record_qkv(be, c, w, s);  // leaves s.h = rms_norm(x) * attn_norm unless the backend fuses norms
  if (be.fuses_norm_into_matmul()) {
    const gpu::tensor ys[] = {s.attn_gate};
    be.norm_matmul_split(ys, w.wq_gate, s.x, w.attn_norm, c.rms_eps, none(), s.h);
  } else {
    be.matmul(s.attn_gate, w.wq_gate, s.h);
  }
  be.rope_kv_store(s.q, s.k, s.v, kv.k, kv.v, s.pos, s.slots, c.head_dim, c.rope, s.rope_freqs, w.q_norm, w.k_norm,
                   c.rms_eps);
  be.attention(s.att, s.q, kv.k, kv.v, s.block_table, s.seq, s.pos, s.attn);
  be.sigmoid_mul(s.att, s.attn_gate, s.att);
  record_out_residual(be, c, w, w.wo, s.att, s);
}

}  // namespace vks::model
