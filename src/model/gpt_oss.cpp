// gpt-oss (OpenAI's open-weight MoE; llama.cpp's "gpt-oss", its openai-moe graph): pre-norm
// layers with q/k/v/o biases, neox RoPE (YaRN in the published files), attention with a learned
// sink logit per head, a sliding window on every other layer (0, 2, ...), the FFN norm named
// post_attention_norm, and a MoE FFN: router with bias, softmax over the k selected logits,
// per-expert biases on gate/up and down, the clamped SwiGLU (gpu::backend::swiglu_oai).
// GGUF tensors beyond qwen3moe's: blk.N.attn_{q,k,v,output}.bias, attn_sinks.weight {H},
// post_attention_norm.weight, ffn_gate_inp.bias {E}, ffn_{gate,up}_exps.bias {Fe, E},
// ffn_down_exps.bias {C, E}.
#include "model/block_ops.hpp"

namespace vks::model {
namespace {

void record_gpt_oss_ffn(gpu::backend& be, const model_config& c, const layer_weights& w, const step_views& s) {
  const gpu::tensor logits[] = {s.moe_logits};
  be.matmul_split(logits, w.ffn_gate_inp, s.h, w.ffn_gate_inp_b);  // router logits + bias (epilogue)
  be.moe_route(s.moe_ids, s.moe_weights, s.moe_logits, {c.n_expert_used, c.expert_gating, c.expert_norm, c.expert_scale});
  // [gate; up] of each row's expert plus its biases, then the clamped SwiGLU, in one matmul's
  // output stage (s.moe_act2 {2Fe, k*T}: the unfused composition's scratch).
  be.matmul_id_swiglu_oai(s.moe_act, w.w_gate_up_exps, s.h, s.moe_ids, w.b_gate_up_exps, c.swiglu_alpha, c.swiglu_limit,
                          s.moe_act2);
  be.matmul_id_bias(s.moe_out, w.w_down_exps, s.moe_act, s.moe_ids, w.b_down_exps);
  be.moe_combine(s.o, s.moe_out, s.moe_weights);
  if (s.next_attn_norm) be.add_rms_norm(s.x, s.o, s.h, *s.next_attn_norm, c.rms_eps);
  else be.add(s.x, s.x, s.o);
}

void record_gpt_oss_layer(gpu::backend& be, const model_config& c, const layer_weights& w, const layer_cache& kv,
                          const step_views& s) {
  record_qkv(be, c, w, s);  // with the stacked q/k/v bias
  gpu::tensor none;
  none.ne = {0, 1, 1, 1};
  be.rope_kv_store(s.q, s.k, s.v, kv.k, kv.v, s.pos, s.slots, c.head_dim, c.rope, s.rope_freqs, none, none, c.rms_eps);
  gpu::attention_params ap = s.attn;
  ap.window = c.is_swa_layer(s.layer) ? c.sliding_window : 0;
  ap.sinks = w.attn_sinks;
  be.attention(s.att, s.q, kv.k, kv.v, s.block_table, s.seq, s.pos, ap);
  const gpu::tensor ys[] = {s.o};
  be.matmul_split(ys, w.wo, s.att, w.bo);  // o = att . wo^T + bo (the bias in the matmul's epilogue)
  be.add_rms_norm(s.x, s.o, s.h, w.ffn_norm, c.rms_eps);
  record_gpt_oss_ffn(be, c, w, s);
}

}  // namespace

const architecture arch_gpt_oss{"gpt-oss", &record_gpt_oss_layer};

}  // namespace vks::model
