// The mixture-of-experts FFN (contract in moe_block.hpp).
#include "model/moe_block.hpp"

#include "model/block_ops.hpp"

namespace vks::model {
namespace {

// s.o += sigmoid(shexp_gate_inp . h) * down_s(silu(gate_s . h) * (up_s . h)) per token: the
// gate scales the activation before down (the same product), so it is {Fs, T} wide, not {C, T}.
void record_shared_expert(gpu::backend& be, const layer_weights& w, const step_views& s) {
  be.matmul(s.shexp_g, w.shexp_gate_inp, s.h);
  record_gate_up_silu(be, s.shexp_act, s.shexp_up, w.w_gate_up_shexp, w.w_gate_shexp, w.w_up_shexp, s.h);
  be.sigmoid_mul(s.shexp_act, s.shexp_g, s.shexp_act);
  be.matmul_add(s.o, w.w_down_shexp, s.shexp_act, s.h);  // s.h is not read again before the next norm writes it
}

}  // namespace

void record_moe_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s) {
  be.matmul(s.moe_logits, w.ffn_gate_inp, s.h);
  be.moe_route(s.moe_ids, s.moe_weights, s.moe_logits, {c.n_expert_used, c.expert_gating, c.expert_norm, c.expert_scale});
  if (w.w_gate_up_exps.ne[0] > 0) {
    be.matmul_id_swiglu(s.moe_act, w.w_gate_up_exps, s.h, s.moe_ids);
  } else {
    be.matmul_id(s.moe_act, w.w_gate_exps, s.h, s.moe_ids);
    be.matmul_id(s.moe_act2, w.w_up_exps, s.h, s.moe_ids);
    be.silu_mul(s.moe_act, s.moe_act, s.moe_act2);
  }
  be.matmul_id(s.moe_out, w.w_down_exps, s.moe_act, s.moe_ids);
  be.moe_combine(s.o, s.moe_out, s.moe_weights);
  if (c.n_ff_shexp > 0) record_shared_expert(be, w, s);
  if (s.next_attn_norm) be.add_rms_norm(s.x, s.o, s.h, *s.next_attn_norm, c.rms_eps);
  else be.add(s.x, s.x, s.o);
}

}  // namespace vks::model
