// qwen3moe: Qwen3 MoE (Qwen3-30B-A3B, 235B-A22B). Qwen3's attention (per-head q/k RMSNorm
// before RoPE, neox RoPE, no QKV bias) and, in every layer, a mixture-of-experts FFN in
// place of the dense one: softmax router over expert_count experts, expert_used_count chosen
// per token, their weights normalised to sum 1 (llama.cpp's build_moe_ffn with norm_w), no
// shared expert. GGUF tensors: blk.N.ffn_gate_inp {C, E}, ffn_gate_exps / ffn_up_exps
// {C, Fe, E}, ffn_down_exps {Fe, C, E}.
#include "model/block_ops.hpp"
#include "model/moe_block.hpp"

namespace vks::model {
namespace {

void record_qwen3moe_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                           const step_views& s) {
  record_qkv(be, c, w, s);
  record_attention(be, c, w, kv, s);
  record_moe_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_qwen3moe{"qwen3moe", &record_qwen3moe_layer};

}  // namespace vks::model
