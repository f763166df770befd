// Shared sub-blocks of the decoder layer, recorded against gpu::backend. Each architecture
// file composes them with its own projections (bias, q/k norm). Shapes: see step_views.
#pragma once

#include "model/arch.hpp"

namespace vks::model {

// q {H*D, T}, k {Hkv*D, T} (projected, biased/normed as the architecture wants) and s.v:
// RoPE on q and k in place, store k/v into the paged cache, paged causal attention into
// s.att, output projection into s.o, then s.x += s.o and s.h = rms_norm(s.x) * ffn_norm
// (one fused op: the FFN's input, ready for record_swiglu_ffn). rope = false skips the
// rotation (smollm3's no-rope layers).
void record_attention(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                      const step_views& s, const gpu::tensor& q, const gpu::tensor& k, bool rope = true);

// Expects s.h = rms_norm(s.x) * ffn_norm (record_attention leaves it there);
// s.o = down(silu(gate(s.h)) * up(s.h)); s.x += s.o, fused with s.h = rms_norm(s.x) *
// *s.next_attn_norm when there is a next layer.
void record_swiglu_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s);

// s.h = rms_norm(s.x) * attn_norm (unless s.h_ready); s.q/k/v = projections of s.h (no bias).
void record_qkv(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s);

}  // namespace vks::model
