// Gemma 4's mixture-of-experts FFN (26B-A4B; llama.cpp's gemma4 graph, MoE layers): a dense
// gelu-tanh FFN and routed gelu-tanh experts side by side on the attention output, each with
// its own norms, summed and normed by post_ffw_norm. Recorded against gpu::backend on the
// shared ops (no per-expert loop on the host); what the layer loads: layer_weights' Gemma 4
// MoE fields (weights.hpp).
#pragma once

#include "model/arch.hpp"

namespace vks::model {

// Expects s.x = the attention output (residual stream after the attention add) and s.h =
// rms_norm(s.x) * ffn_norm. Leaves s.o = post_ffw_norm(mlp + moe) for the caller's residual
// add, where
//   mlp = post_ffw_norm_1(down(gelu(gate . h) * (up . h)))            (record_gemma_ffn)
//   moe = post_ffw_norm_2(sum_s w_s * scale[e_s] * down_e(gelu(gate_e . h2) * (up_e . h2)))
// with h2 = rms_norm(s.x) * pre_ffw_norm_2, router logits = ffn_gate_inp . (rms_norm(s.x) *
// ffn_gate_inp.scale / sqrt(C)), the k largest of softmax(logits) renormalised to sum 1 (w_s),
// and scale = ffn_down_exps.scale (per expert; absent: 1). Scratch: s.h, the MoE views
// (moe_logits, moe_act2 hold the per-slot expert scale and scaled weights after the experts
// ran). s.x is not written.
void record_gemma4_moe_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s);

}  // namespace vks::model
