// qwen35moe: Qwen3.5/3.6 MoE (Qwen3.5-35B-A3B, 122B-A10B, 397B-A17B). qwen35's hybrid stack
// (gated DeltaNet layers and, every full_attn_interval-th, gated attention with partial rope;
// delta_net_block.hpp) with a mixture-of-experts FFN in every layer after the post-attention
// norm: softmax router, expert_used_count of expert_count experts normalised to sum 1, plus a
// shared SwiGLU expert scaled by sigmoid(ffn_gate_inp_shexp . h) (llama.cpp's qwen35moe graph;
// moe_block.hpp). GGUF tensors as qwen35's, then ffn_gate_inp {C, E}, ffn_{gate,up}_exps
// {C, Fe, E}, ffn_down_exps {Fe, C, E}, ffn_gate_inp_shexp {C}, ffn_{gate,up}_shexp {C, Fs},
// ffn_down_shexp {Fs, C}.
#include "model/delta_net_block.hpp"
#include "model/moe_block.hpp"

namespace vks::model {
namespace {

void record_qwen35moe_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                            const step_views& s) {
  if (c.is_recurrent_layer(s.layer)) record_delta_net(be, c, w, s);
  else record_gated_attention(be, c, w, kv, s);
  // Fusing backends leave the FFN norm to the FFN's first matmul; the router needs s.h.
  if (be.fuses_norm_into_matmul()) be.rms_norm(s.h, s.x, w.ffn_norm, c.rms_eps);
  record_moe_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_qwen35moe{"qwen35moe", &record_qwen35moe_layer};

}  // namespace vks::model
