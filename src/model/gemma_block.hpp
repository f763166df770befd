// The Gemma 2/3 decoder layer, shared by gemma2.cpp and gemma3.cpp (llama.cpp's gemma2 and
// gemma3 graphs): pre-norm attention with optional per-head q/k norm, per-layer rope base
// (local layers: rope_freq_base_swa) and sliding window, score soft-capping, a norm of the
// attention output before the residual add, then a gelu-tanh FFN whose output is normed
// before its residual add. The embedding scale and final soft-capping are the runner's.
#pragma once

#include "model/arch.hpp"

namespace vks::model {

void record_gemma_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                        const step_views& s);

// The gelu-tanh FFN of a Gemma 2/3/4 layer on s.h (already normed by ffn_norm): s.o =
// ffn_post_norm(down(gelu(gate . h) * (up . h))); gate/up stacked or apart as loaded. The
// residual add is the caller's.
void record_gemma_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s);
// The same FFN normed by post_norm instead (Gemma 4's MoE layers: post_ffw_norm_1).
void record_gemma_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s,
                      const gpu::tensor& post_norm);

}  // namespace vks::model
