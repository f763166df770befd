// qwen35: Qwen3.5 (dense), a hybrid of gated DeltaNet layers (a recurrent state per sequence,
// model/state_cache.hpp) and, every full_attn_interval-th layer, gated attention layers
// (per-head q/k RMSNorm, partial neox RoPE: llama.cpp's imrope reduces to it for text, whose
// position sections are all equal); each followed by the dense SwiGLU FFN after the
// post-attention norm. Layers: delta_net_block.hpp.
#include "model/block_ops.hpp"
#include "model/delta_net_block.hpp"

namespace vks::model {
namespace {

void record_qwen35_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                         const step_views& s) {
  if (c.is_recurrent_layer(s.layer)) record_delta_net(be, c, w, s);
  else record_gated_attention(be, c, w, kv, s);
  record_swiglu_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_qwen35{"qwen35", &record_qwen35_layer};

}  // namespace vks::model
