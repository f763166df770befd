// Device-resident weights of one model: every tensor validated against the config (shape,
// type) and uploaded once through gpu::backend. Shapes in ggml order (legend in config.hpp):
// matrices {K, N} = {input features, output features}; vectors {n}.
// Ownership: the tensors are views into buffers owned by the backend (which has no free:
// weights live as long as the backend).
#pragma once

#include <vector>

#include "base/result.hpp"
#include "gpu/backend.hpp"
#include "model/config.hpp"
#include "model/model_file.hpp"

namespace vks::model {

// Projections that share a type are stacked by rows into one tensor (wqkv = [wq; wk; wv],
// w_gate_up = [w_gate; w_up]) and their separate fields stay empty; an empty stack (ne[0] ==
// 0) means the separate fields hold them.
struct layer_weights {
  gpu::tensor attn_norm;          // {C} f32
  gpu::tensor wqkv;               // {C, H*D + 2*Hkv*D}, or empty
  gpu::tensor wq, wk, wv;         // {C, H*D}, {C, Hkv*D}, {C, Hkv*D} (when wqkv is empty)
  gpu::tensor bqkv;               // {H*D + 2*Hkv*D} f32 (qkv_bias only, else empty)
  gpu::tensor bq, bk, bv;         // {H*D}, {Hkv*D}, {Hkv*D}: views of bqkv
  gpu::tensor q_norm, k_norm;     // {D} f32 (qk_norm only)
  gpu::tensor attn_post_norm, ffn_post_norm;  // {C} f32 (post_norms only: gemma)
  gpu::tensor wo;                 // {H*D, C}
  gpu::tensor ffn_norm;           // {C} f32
  gpu::tensor w_gate_up;          // {C, 2F}, or empty
  gpu::tensor w_gate, w_up;       // {C, F} (when w_gate_up is empty)
  gpu::tensor w_down;             // {F, C}
  // Mixture of experts (config.is_moe(); the dense FFN fields above stay empty). Fe = n_ff_exp.
  gpu::tensor ffn_gate_inp;       // {C, E} router, f32 as llama.cpp's quantizer keeps it (any type loads)
  gpu::tensor w_gate_up_exps;     // {C, 2Fe, E}: expert e's [gate_e; up_e] interleaved at load, or empty
  gpu::tensor w_gate_exps, w_up_exps;  // {C, Fe, E} (when w_gate_up_exps is empty: the types differ)
  gpu::tensor w_down_exps;        // {Fe, C, E}
  // gpt-oss (model_config::attn_sinks etc.), all f32: its FFN norm is post_attention_norm
  // (loaded as ffn_norm above).
  gpu::tensor bo;                 // {C} attn_output.bias
  gpu::tensor attn_sinks;         // {H} per-head sink logits
  gpu::tensor ffn_gate_inp_b;     // {E} router bias
  gpu::tensor b_gate_up_exps;     // {2Fe, E}: expert e's [gate bias; up bias], as w_gate_up_exps interleaves
  gpu::tensor b_down_exps;        // {C, E}
  // qwen35, qwen35moe, qwen3next (config.is_hybrid()). Gated attention layers: the file's attn_q {C, 2*H*D} holds
  // each head's q rows then its gate rows; load splits it into q (wq, or stacked in wqkv as
  // usual) and wq_gate {C, H*D} (head-major gate rows); ffn_norm is post_attention_norm.
  gpu::tensor wq_gate;
  // Gated DeltaNet layers (config.is_recurrent_layer(l); no q/k/v/o): Cc = (2 Hk + Hv) S.
  gpu::tensor ssm_in;             // {C, Cc + Hv*S}: [attn_qkv; attn_gate] stacked, or empty
  gpu::tensor ssm_qkv, ssm_z;     // {C, Cc}, {C, Hv*S} (when ssm_in is empty)
  gpu::tensor ssm_ba;             // {C, 2 Hv}: [ssm_beta; ssm_alpha] stacked, or empty
  gpu::tensor ssm_beta, ssm_alpha;  // {C, Hv} (when ssm_ba is empty)
  gpu::tensor ssm_conv;           // {Kc, Cc} f32
  gpu::tensor ssm_dt, ssm_a;      // {Hv} f32: dt bias, a = -exp(A_log)
  gpu::tensor ssm_norm;           // {S} f32: the gated RMSNorm's weight
  gpu::tensor ssm_out;            // {Hv*S, C}
  // Gemma 4 (model/gemma4.cpp): v_norm is a {D} ones vector (V's weightless RMSNorm); the
  // per-layer embedding's gate {C, P}, projection {P, C} and its output norm {C} (P =
  // n_embd_per_layer > 0 only); out_scale: blk.N.layer_output_scale (1 when absent). A layer
  // without attn_v uses attn_k's projection as V (wv == wk); the KV-shared layers load no
  // k/v (wk, wv, k_norm empty).
  gpu::tensor v_norm;
  gpu::tensor ple_gate, ple_proj, ple_post_norm;
  float out_scale = 1.f;
  // Gemma 4's MoE layers (g4_moe: the layer has ffn_gate_inp; model/gemma4_moe.hpp): the
  // dense FFN fields above, the router ffn_gate_inp and the expert stacks (w_gate_exps and
  // w_up_exps apart: the experts' gelu needs gate and up separately; a file's fused
  // ffn_gate_up_exps is split at load), plus: moe_router_norm {C} f32 = ffn_gate_inp.scale /
  // sqrt(C) (the router's input is rms_norm(x) times it); pre_ffw_norm_2 (the experts' input
  // norm), post_ffw_norm_1 / _2 (each branch's output norm) {C} f32; expert_scale {1, E} f32
  // ffn_down_exps.scale (a table of E one-element rows), ne[0] == 0 when the file has none.
  bool g4_moe = false;
  gpu::tensor moe_router_norm, ffn_pre_norm_2, ffn_post_norm_1, ffn_post_norm_2;
  gpu::tensor expert_scale{.ne = {0, 1, 1, 1}};
  // Shared expert (config.n_ff_shexp > 0: qwen35moe, qwen3next), Fs = n_ff_shexp.
  gpu::tensor shexp_gate_inp;     // {C, 1} f32: the sigmoid gate's row (ffn_gate_inp_shexp {C})
  gpu::tensor w_gate_up_shexp;    // {C, 2Fs}: [ffn_gate_shexp; ffn_up_shexp] stacked, or empty
  gpu::tensor w_gate_shexp, w_up_shexp;  // {C, Fs} (when w_gate_up_shexp is empty)
  gpu::tensor w_down_shexp;       // {Fs, C}
};

struct model_weights {
  gpu::tensor tok_embd;           // {C, V}
  gpu::tensor output_norm;        // {C} f32
  gpu::tensor output;             // {C, V}; == tok_embd when tied
  gpu::tensor rope_freqs;         // {n_dims/2} f32 divisors, or ne[0] == 0 for none
  // Gemma 4's per-layer embeddings (n_embd_per_layer = P > 0): per_layer_token_embd {L*P, V},
  // per_layer_model_proj {C, L*P}, per_layer_proj_norm {P} f32.
  gpu::tensor ple_tok_embd, ple_model_proj, ple_proj_norm;
  gpu::tensor ple_v_norm_ones;    // {max D} ones (gemma4's V norm; layer_weights::v_norm views its head's prefix)
  std::vector<layer_weights> layers;
  uint64_t n_bytes = 0;           // device bytes used by weights
};

// Validates and uploads. Errors: errc::parse (missing tensor, shape mismatch),
// errc::unsupported (element type), or the backend's allocation/upload error.
// 1-D tensors (norms, biases, rope factors) are converted to f32 on the host.
// ctx_per_seq: the tokens one sequence may hold (runner_options::max_context); it picks
// LongRoPE's long or short factors (model_config::longrope). 0 = the trained context.
result<model_weights> load_weights(const model_file& file, gpu::backend& be, int ctx_per_seq = 0);

}  // namespace vks::model
