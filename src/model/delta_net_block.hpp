// The two layer kinds of a hybrid model (qwen35), recorded against gpu::backend:
// - the gated DeltaNet layer: in-projections (qkv and the output gate z; beta and alpha),
//   the short causal conv with its rolling state + silu, the gated delta rule over the
//   recurrent state (gpu::backend::delta_net: q/k l2 norms, decay and beta gates), the gated
//   RMSNorm rms_norm(o) * w * silu(z) per value head, the out-projection;
// - the gated attention layer: q/k/v with per-head q/k RMSNorm and (partial) RoPE into the
//   paged cache, attention, times sigmoid(gate) (the gate's rows come from attn_q), wo.
// Both end in the residual add and the FFN norm, as block_ops' record_attention does, so
// record_swiglu_ffn follows either. The layer's recurrent state is s.state (runner-set).
#pragma once

#include "model/arch.hpp"

namespace vks::model {

void record_delta_net(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s);
void record_gated_attention(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                            const step_views& s);

}  // namespace vks::model
