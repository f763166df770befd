// Architecture table: each supported architecture records one transformer layer of a
// forward step against gpu::backend (one file per architecture: llama.cpp, qwen2.cpp,
// qwen3.cpp, qwen3moe.cpp, gpt_oss.cpp, phi3.cpp, smollm3.cpp, mistral3.cpp, gemma2.cpp, gemma3.cpp, gemma4.cpp, qwen35.cpp, qwen35moe.cpp,
// qwen3next.cpp). The runner owns everything around the layers (embedding gather, final norm,
// lm head, inputs). Shared pieces of the layer (RoPE + paged attention, SwiGLU FFN) live in
// block_ops.hpp.
#pragma once

#include <string_view>

#include "gpu/backend.hpp"
#include "model/config.hpp"
#include "model/kv_cache.hpp"
#include "model/state_cache.hpp"
#include "model/weights.hpp"

namespace vks::model {

// Activation views for one step of T tokens (flattened batch of S sequences). All f32
// unless stated; every view starts at row 0 of a scratch buffer sized for the runner's
// maximum batch.
struct step_views {
  int64_t n_tokens = 0;            // T
  gpu::tensor x;                   // {C, T} residual stream (updated in place)
  gpu::tensor h;                   // {C, T} normed input of a sub-block
  gpu::tensor q, k, v;             // {H*D, T}, {Hkv*D, T}, {Hkv*D, T}
  gpu::tensor qn, kn;              // unused: rope_kv_store norms q/k in place (to remove with runner.cpp's qn_/kn_)
  gpu::tensor att;                 // {H*D, T} attention output
  gpu::tensor o;                   // {C, T} sub-block output before the residual add
  gpu::tensor gate, up;            // {F, T}
  gpu::tensor pos, seq, slots;     // {T} i32: position, sequence index, cache slot
  gpu::tensor block_table;         // {maxb, S} i32
  gpu::tensor rope_freqs;          // {n_dims/2} f32, or ne[0] == 0 for none
  // Mixture of experts (config.is_moe(); moe_block.hpp), k = n_expert_used, Fe = n_ff_exp:
  gpu::tensor moe_logits;          // {E, T} router logits
  gpu::tensor moe_ids, moe_weights;  // {k, T} i32 chosen experts, f32 their weights
  gpu::tensor moe_act, moe_act2;   // {Fe, k*T} expert activations (moe_act2: up, when gate/up are separate;
                                   // gpt-oss: {2Fe, k*T}, each row [gate; up])
  gpu::tensor moe_out;             // {C, k*T} expert outputs before the weighted sum
  gpu::tensor shexp_g;             // {1, T} the shared expert's gate logit (config.n_ff_shexp > 0)
  gpu::tensor shexp_act, shexp_up; // {Fs, T} its SwiGLU activation, and the up scratch
  // Hybrid models (config.is_hybrid(); delta_net_block.hpp), Cc = (2 Hk + Hv) S:
  gpu::tensor attn_gate;           // {H*D, T} gated attention's output gate (pre-sigmoid)
  gpu::tensor ssm_x, ssm_c;        // {Cc, T} in-projection, conv output
  gpu::tensor ssm_z, ssm_o;        // {Hv*S, T} output gate, delta-rule output
  gpu::tensor ssm_beta, ssm_alpha; // {Hv, T}
  // Gemma 4 per-layer embeddings (config n_embd_per_layer = P > 0; model/gemma4.hpp):
  gpu::tensor ple;                 // {P, L*T}: layer l's inputs are rows l*T .. l*T+T-1
  gpu::tensor ple_gate;            // {P, T}
  gpu::tensor seq_info;            // {8, S} i32 (gpu::k_seq_info_fields per sequence)
  layer_state state;               // this layer's recurrent states (set per layer by the runner)
  gpu::attention_params attn;
  // Per layer, set by the runner. The residual add that ends a layer is fused with the next
  // layer's attn_norm (gpu::backend::add_rms_norm): next_attn_norm is that weight (nullptr
  // for the last layer), and h_ready tells record_qkv that s.h already holds the normed x.
  const gpu::tensor* next_attn_norm = nullptr;
  bool h_ready = false;
  int layer = 0;                   // index of the layer being recorded
};

using record_layer_fn = void (*)(gpu::backend& be, const model_config& c, const layer_weights& w,
                                 const layer_cache& kv, const step_views& s);

struct architecture {
  std::string_view name;           // GGUF general.architecture
  record_layer_fn record_layer;
};

// nullptr for an unknown name.
const architecture* find_architecture(std::string_view name);

extern const architecture arch_llama;
extern const architecture arch_qwen2;
extern const architecture arch_qwen3;
extern const architecture arch_qwen3moe;
extern const architecture arch_gpt_oss;
extern const architecture arch_phi3;
extern const architecture arch_smollm3;
extern const architecture arch_mistral3;
extern const architecture arch_gemma2;
extern const architecture arch_gemma3;
extern const architecture arch_gemma4;
extern const architecture arch_qwen35;
extern const architecture arch_qwen35moe;
extern const architecture arch_qwen3next;

}  // namespace vks::model
