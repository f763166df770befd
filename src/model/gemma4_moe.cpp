// Gemma 4's mixture-of-experts FFN (contract in gemma4_moe.hpp): the order of llama.cpp's
// gemma4 graph. The experts' activation is gelu-tanh, so gate and up run as two matmul_id
// (the fused matmul_id_swiglu is SiLU) and gelu_mul; the per-expert output scale multiplies
// the routing weights (the same product: down_e(.) * scale[e] * w = down_e(.) * (w * scale[e])).
#include "model/gemma4_moe.hpp"

#include "model/gemma_block.hpp"

namespace vks::model {
namespace {

// The routing weights with each slot's expert scale folded in: {k, T} in a view of
// s.moe_act2 (free once the experts' down matmul has read moe_act). get_rows gathers
// scale[ids] (a table of E rows of 1) into a view of s.moe_logits (free after routing);
// moe_combine with one slot per row is then the elementwise product w * scale[ids].
gpu::tensor scaled_weights(gpu::backend& be, const layer_weights& w, const step_views& s, int64_t k) {
  const int64_t R = k * s.n_tokens;
  const gpu::tensor sc = s.moe_logits.view({1, s.moe_logits.n_elements(), 1, 1}).rows(0, R);
  const gpu::tensor out = s.moe_act2.view({1, s.moe_act2.n_elements(), 1, 1}).rows(0, R);
  be.get_rows(sc, w.expert_scale, s.moe_ids.view({R, 1, 1, 1}));
  be.moe_combine(out, sc, s.moe_weights.view({1, R, 1, 1}));
  return out.view({k, s.n_tokens, 1, 1});
}

}  // namespace

void record_gemma4_moe_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s) {
  record_gemma_ffn(be, c, w, s, w.ffn_post_norm_1);  // s.o = the dense branch; s.h is free after it
  // Router on rms_norm(x) * scale / sqrt(C) (the weight folds both, model/weights).
  be.rms_norm(s.h, s.x, w.moe_router_norm, c.rms_eps);
  be.matmul(s.moe_logits, w.ffn_gate_inp, s.h);
  be.moe_route(s.moe_ids, s.moe_weights, s.moe_logits, {c.n_expert_used, c.expert_gating, c.expert_norm, c.expert_scale});
  be.rms_norm(s.h, s.x, w.ffn_pre_norm_2, c.rms_eps);
  be.matmul_id(s.moe_act, w.w_gate_exps, s.h, s.moe_ids);
  be.matmul_id(s.moe_act2, w.w_up_exps, s.h, s.moe_ids);
  be.gelu_mul(s.moe_act, s.moe_act, s.moe_act2);
  be.matmul_id(s.moe_out, w.w_down_exps, s.moe_act, s.moe_ids);
  const gpu::tensor weights = w.expert_scale.ne[0] > 0 ? scaled_weights(be, w, s, c.n_expert_used) : s.moe_weights;
  be.moe_combine(s.h, s.moe_out, weights);
  be.rms_norm(s.h, s.h, w.ffn_post_norm_2, c.rms_eps);
  be.add(s.o, s.o, s.h);
  be.rms_norm(s.o, s.o, w.ffn_post_norm, c.rms_eps);
}

}  // namespace vks::model
