// The mixture-of-experts FFN (#22), recorded against gpu::backend: router, top-k on the
// device, the selected experts' SwiGLU as grouped matmuls over the stacked expert tensors
// (gpu::backend::matmul_id: only the chosen experts' weights are read), weighted sum. A fixed
// number of dispatches per layer whatever the batch picks: no per-expert loop on the host.
#pragma once

#include "model/arch.hpp"

namespace vks::model {

// Expects s.h = rms_norm(s.x) * ffn_norm (record_attention leaves it there). Records:
// router logits = ffn_gate_inp . s.h; moe_route (k ids and weights per token);
// act = silu(gate_e . s.h) * (up_e . s.h) for each (token, slot) (one fused matmul_id_swiglu
// over the interleaved stack, else two matmul_id and silu_mul); out = down_e . act;
// s.o = the weighted sum over the slots; with a shared expert (c.n_ff_shexp > 0: qwen35moe,
// qwen3next) s.o += sigmoid(shexp_gate_inp . s.h) * its SwiGLU (4 dispatches more); then s.x += s.o fused with s.h = rms_norm(s.x) *
// *s.next_attn_norm when there is a next layer. 5 dispatches before the residual add.
void record_moe_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s);

}  // namespace vks::model
