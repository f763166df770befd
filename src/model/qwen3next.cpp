// qwen3next: Qwen3-Next (80B-A3B), the predecessor of Qwen3.5 MoE. The layer is qwen35moe's
// (gated DeltaNet or gated attention with partial neox rope, then routed experts plus the
// sigmoid-gated shared expert; llama.cpp's qwen3next graph). What differs is in the file and
// is undone at load (model/weights.cpp, load_qwen3next_delta_net): ssm_ba {C, 2 Hv} holds
// beta and alpha interleaved per key head, value heads are grouped by key head (q/k repeated
// interleaved, where qwen35 tiles them), and old files fuse q/k/v/z into ssm_in.
#include "model/delta_net_block.hpp"
#include "model/moe_block.hpp"

namespace vks::model {
namespace {

void record_qwen3next_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                            const step_views& s) {
  if (c.is_recurrent_layer(s.layer)) record_delta_net(be, c, w, s);
  else record_gated_attention(be, c, w, kv, s);
  if (be.fuses_norm_into_matmul()) be.rms_norm(s.h, s.x, w.ffn_norm, c.rms_eps);  // the router reads s.h
  record_moe_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_qwen3next{"qwen3next", &record_qwen3next_layer};

}  // namespace vks::model
