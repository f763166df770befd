// Shared sub-blocks of the decoder layer, recorded against gpu::backend. Each architecture
// file composes them with its own projections (bias, q/k norm). Shapes: see step_views.
#pragma once

#include "model/arch.hpp"

namespace vks::model {

// s.q {H*D, T}, s.k {Hkv*D, T}, s.v (projected, biased): per-head q/k RMSNorm when the
// config has qk_norm (Qwen3), RoPE on q and k, k/v into the paged cache (one fused op),
// paged causal attention into s.att, output projection into s.o, then s.x += s.o and s.h =
// rms_norm(s.x) * ffn_norm (one fused op: the FFN's input, ready for record_swiglu_ffn).
// On a backend that fuses norms into matmuls (gpu::backend::fuses_norm_into_matmul): s.x +=
// att . wo^T in one op (matmul_add), then s.h as above unless ffn_norms_x (the caller's FFN
// is record_swiglu_ffn, which norms s.x inside its gate/up matmul there).
// rope = false skips the rotation (smollm3's no-rope layers). s.k may be left unrotated:
// only the caches and s.q are outputs.
void record_attention(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                      const step_views& s, bool rope = true, bool ffn_norms_x = false);

// act = silu(gate . x) * (up . x) for the rows of one FFN: gate/up stacked at load (one
// matmul with the SwiGLU epilogue; up is its scratch) or apart (two matmuls and silu_mul into
// act, up holding up . x).
void record_gate_up_silu(gpu::backend& be, const gpu::tensor& act, const gpu::tensor& up, const gpu::tensor& w_gate_up,
                         const gpu::tensor& w_gate, const gpu::tensor& w_up, const gpu::tensor& x);

// Expects s.h = rms_norm(s.x) * ffn_norm (record_attention leaves it there);
// s.o = down(silu(gate(s.h)) * up(s.h)); s.x += s.o, fused with s.h = rms_norm(s.x) *
// *s.next_attn_norm when there is a next layer. Fusing backends: h = rms_norm(s.x) *
// ffn_norm inside gate/up (norm_matmul_swiglu) and s.x += down(...) (matmul_add); s.h is not
// left for the next layer (record_qkv norms s.x there).
void record_swiglu_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s);

// s.h = rms_norm(s.x) * attn_norm (unless s.h_ready); s.q/k/v = projections of s.h, plus
// their biases when the config has qkv_bias. Fusing backends ignore s.h_ready: the norm of
// s.x is computed inside the stacked q/k/v matmul (norm_matmul_split), or into s.h first.
void record_qkv(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s);

}  // namespace vks::model
