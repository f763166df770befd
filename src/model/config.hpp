// model_config: the hyper-parameters of a decoder-only transformer, read from GGUF
// `<arch>.*` keys or a Hugging Face config.json. Pure data; validated by validate().
// Legend (as in gpu/backend.hpp): C model width, H query heads, Hkv key/value heads,
// D head dim, F feed-forward width, V vocab, L layers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/gguf.hpp"
#include "base/result.hpp"
#include "gpu/backend.hpp"

namespace vks::model {

// Llama 3.x frequency-dependent RoPE scaling (HF rope_scaling.rope_type == "llama3").
struct llama3_rope_scaling {
  bool enabled = false;
  float factor = 8.f;
  float low_freq_factor = 1.f;
  float high_freq_factor = 4.f;
  int original_context = 8192;
};

// The rope.scaling a model file declares, as read (the rope_params fields derive from it):
// type "none" | "linear" | "yarn" | "llama3" (HF only; GGUF carries rope_freqs.weight).
struct rope_scaling_info {
  std::string type = "none";
  float factor = 1.f;          // context extension factor (freq_scale = 1 / factor)
  int original_context = 0;    // yarn: the pre-extension context (0 = n_ctx)
  float attn_factor = 1.f;     // extra cos/sin magnitude (GGUF rope.scaling.attn_factor)
  float beta_fast = 32.f, beta_slow = 1.f;  // yarn correction range (llama.cpp defaults)
  // yarn: round the correction range out to whole pairs (llama.cpp always does; transformers
  // unless config.json's rope_scaling says "truncate": false, as gpt-oss's does).
  bool truncate = true;
};

struct model_config {
  std::string arch;          // "llama" | "qwen2" | "qwen3" | "qwen3moe" | "gpt-oss" | "phi3" | "smollm3" | "mistral3" | "gemma2" | "gemma3" | "gemma4" | "qwen35" | "qwen35moe" | "qwen3next"
  int n_layer = 0;           // L
  int n_embd = 0;            // C
  int n_head = 0;            // H
  int n_head_kv = 0;         // Hkv
  int head_dim = 0;          // D (C / H unless stated)
  int n_ff = 0;              // F
  int n_vocab = 0;           // V
  int n_ctx = 0;             // trained context length (tokens)
  float rms_eps = 1e-5f;
  gpu::rope_params rope;     // mode, n_dims (<= D), freq_base, freq_scale
  llama3_rope_scaling rope_llama3;
  rope_scaling_info rope_scaling;
  bool tied_embeddings = false;  // lm head reuses token_embd
  bool qkv_bias = false;         // qwen2
  bool qk_norm = false;          // qwen3: per-head RMSNorm of q and k before RoPE
  bool fused_qkv = false;        // one attn_qkv.weight {C, (H + 2 Hkv) D} (phi3)
  bool fused_gate_up = false;    // ffn_up.weight {C, 2F}: gate rows, then up rows (phi3)
  int no_rope_layer_step = 0;    // smollm3: layer l skips RoPE when (l + 1) % step == 0
  float attn_scale = 0.f;        // attention.scale (0 = 1/sqrt(D))
  // LongRoPE (Phi-3 128k, Phi-4-mini): the file carries rope_factors_long/short.weight
  // ({n_dims/2} f32 divisors); load_weights picks long when the context per sequence
  // exceeds rope_scaling.original_context (else n_ctx), short otherwise, as llama.cpp
  // does; rope_scaling.attn_factor scales cos/sin (rope.mscale) either way.
  bool longrope = false;
  // Gemma 2/3 (gemma_block.hpp): x = embedding * embd_scale; sliding-window layers l with
  // l % swa_pattern < swa_pattern - 1 attend to the last sliding_window positions (rope base
  // rope_freq_base_swa, unscaled, when that is > 0); scores and final logits soft-capped;
  // post-attention / post-FFN norms; gelu-tanh FFN.
  float embd_scale = 0.f;        // 0 = none
  int sliding_window = 0;        // 0 = every layer global
  int swa_pattern = 0;
  float rope_freq_base_swa = 0.f;
  float attn_softcap = 0.f, final_softcap = 0.f;
  bool post_norms = false;       // blk.N.post_attention_norm / post_ffw_norm
  bool gelu_ffn = false;
  bool is_swa_layer(int l) const {
    if (!swa_layers.empty()) return sliding_window > 0 && l >= 0 && l < static_cast<int>(swa_layers.size()) && swa_layers[static_cast<size_t>(l)] != 0;
    return sliding_window > 0 && swa_pattern > 0 && l % swa_pattern < swa_pattern - 1;
  }
  // Gemma 4 (model/gemma4.cpp): the sliding layers as a per-layer list (GGUF
  // attention.sliding_window_pattern, an array; empty: swa_pattern above), their own rope
  // dimensions (rope.dimension_count_swa; 0 = rope.n_dims); V rms-normed without a weight; the
  // global layers' rope divides by rope_freqs.weight (proportional rope), the sliding ones by
  // nothing; attention scale 1; per-layer embeddings of width n_embd_per_layer (0: none); the
  // last n_kv_shared layers read the KV of an earlier layer of their kind (kv_source_layer)
  // and store none; blk.N.layer_output_scale scales each layer's output.
  std::vector<uint8_t> swa_layers;
  // HF Gemma 4 (model/hf_gemma.hpp): the global layers' proportional rope as divisors per rope
  // pair (1, or 1e30 for the pairs it leaves unrotated), read from config.json; model_file
  // serves them as rope_freqs.weight, the tensor a GGUF carries. Empty otherwise.
  std::vector<float> rope_freq_factors;
  int rope_n_dims_swa = 0;
  bool v_norm = false;
  int n_embd_per_layer = 0;      // P
  int n_kv_shared = 0;
  // The layer whose KV cache layer l attends over: l itself, or for the last n_kv_shared
  // layers the last earlier layer of the same kind as llama.cpp picks it (first shared
  // layer - 2 for sliding layers, - 1 for global ones).
  int kv_source_layer(int l) const {
    const int first = n_layer - n_kv_shared;
    if (n_kv_shared <= 0 || l < first) return l;
    return first - (is_swa_layer(l) ? 2 : 1);
  }
  // Per-layer attention shapes (Gemma 4: the sliding layers' heads are head_dim_swa wide,
  // GGUF attention.key_length_swa, the global ones head_dim; KV head counts per layer from an
  // attention.head_count_kv array). head_dim_swa 0: head_dim; n_head_kv_layer empty:
  // n_head_kv everywhere. V heads are as wide as K heads in every layer.
  int head_dim_swa = 0;
  std::vector<int> n_head_kv_layer;
  int layer_head_dim(int l) const { return head_dim_swa > 0 && is_swa_layer(l) ? head_dim_swa : head_dim; }
  int layer_n_head_kv(int l) const {
    return l >= 0 && l < static_cast<int>(n_head_kv_layer.size()) ? n_head_kv_layer[static_cast<size_t>(l)] : n_head_kv;
  }
  // Hkv_l * D_l: one token's K (or V) row in layer l's cache; H * D_l: its q / attention output.
  int64_t layer_kv_width(int l) const { return int64_t{layer_n_head_kv(l)} * layer_head_dim(l); }
  int64_t layer_q_width(int l) const { return int64_t{n_head} * layer_head_dim(l); }
  // Per-layer feed-forward widths (Gemma 4 E2B/E4B: a GGUF feed_forward_length array whose
  // values differ; HF use_double_wide_mlp doubles the KV-shared layers'). n_ff_layer empty:
  // n_ff everywhere; else one width per layer (n_ff is layer 0's).
  std::vector<int> n_ff_layer;
  int layer_n_ff(int l) const {
    return l >= 0 && l < static_cast<int>(n_ff_layer.size()) ? n_ff_layer[static_cast<size_t>(l)] : n_ff;
  }
  int max_n_ff() const;  // the widest layer's (the FFN scratch)
  // The widest of those over the layers (scratch sizes).
  int max_head_dim() const;
  int64_t max_kv_width() const;
  int64_t max_q_width() const { return int64_t{n_head} * max_head_dim(); }
  // Mixture of experts (qwen3moe; model/moe_block.hpp): each layer's FFN is n_expert_used of
  // n_expert SwiGLU experts of width n_ff_exp, picked per token by the router ffn_gate_inp
  // (gating, normalisation and scale as gpu::moe_route_params says). n_expert == 0: dense.
  int n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  gpu::moe_gating expert_gating = gpu::moe_gating::softmax;
  bool expert_norm = false;
  float expert_scale = 0.f;      // 0 or 1: none
  // qwen35moe / qwen3next: a shared SwiGLU expert of width n_ff_shexp run on every token, its
  // output scaled by sigmoid(ffn_gate_inp_shexp . h) and added to the routed experts' sum.
  // 0: none.
  int n_ff_shexp = 0;
  bool is_moe() const { return n_expert > 0; }
  // gpt-oss (model/gpt_oss.cpp): a learned sink logit per query head (blk.N.attn_sinks), a bias
  // on the output projection (attn_output.bias), router and per-expert biases
  // (ffn_gate_inp.bias, ffn_{gate,up,down}_exps.bias) and the clamped SwiGLU of
  // gpu::backend::swiglu_oai with llama.cpp's constants.
  bool attn_sinks = false, attn_out_bias = false, expert_bias = false, swiglu_oai = false;
  float swiglu_alpha = 1.702f, swiglu_limit = 7.f;
  // Hybrid recurrent models (qwen35; model/delta_net_block.hpp, model/state_cache.hpp): layer l
  // is a gated DeltaNet layer (recurrent state, no KV) unless (l + 1) % full_attn_interval ==
  // 0; the others are gated attention layers (attn_q rows carry a per-head sigmoid output
  // gate; partial RoPE: rope.n_dims < D). 0: no recurrent layers.
  int full_attn_interval = 0;
  int ssm_conv_kernel = 0;                // Kc (ssm.conv_kernel)
  int ssm_state = 0;                      // S: key and value head width (ssm.state_size)
  int ssm_k_heads = 0, ssm_v_heads = 0;   // Hk (ssm.group_count), Hv (ssm.time_step_rank)
  bool is_hybrid() const { return full_attn_interval > 0; }
  bool is_recurrent_layer(int l) const { return full_attn_interval > 0 && (l + 1) % full_attn_interval != 0; }
  int64_t ssm_conv_channels() const { return int64_t{2 * ssm_k_heads + ssm_v_heads} * ssm_state; }
  int32_t bos_id = -1, eos_id = -1;  // from config.json (GGUF keeps them in tokenizer.*)
  // How an embedding model pools its hidden rows, in GGUF `<arch>.pooling_type` numbers
  // (0 none, 1 mean, 2 cls, 3 last, 4 rank); -1: the file does not say (a generation model).
  int pooling_type = -1;

  // errc::parse naming the first inconsistent field.
  result<void> validate() const;
  std::string summary() const;
};

// Supported architectures (GGUF general.architecture names).
bool is_known_arch(std::string_view arch);

// From GGUF metadata. `has_output` tells whether output.weight exists (else tied), and
// the rope mode follows the architecture (GGUF llama Q/K are permuted for `normal`).
result<model_config> config_from_gguf(const gguf::file& f);
// From config.json text. HF checkpoints keep Q/K un-permuted, so RoPE is `neox` for all.
result<model_config> config_from_hf_json(std::string_view json_text);

// Sets c.rope's freq_scale / YaRN fields from c.rope_scaling (after rope.n_dims,
// freq_base and n_ctx are known), as llama.cpp does: linear: freq_scale = 1/factor, cos/sin
// times attn_factor; yarn: also ext_factor 1, correction dims from beta_fast/slow over the
// original context, mscale = attn_factor * (1 + 0.1 ln factor) when factor > 1.
// errc::unsupported for a type that is neither, errc::parse for a bad factor.
result<void> apply_rope_scaling(model_config& c);
// Pooling of a sentence-transformers checkpoint from its Pooling module's config.json text
// (pooling_mode_mean_tokens / _cls_token / _lasttoken): 1, 2 or 3; -1 when it names none
// of those (or is not valid JSON).
int pooling_from_sentence_transformers(std::string_view pooling_config_json);

// Per-frequency divisors for llama3 RoPE scaling: n_dims/2 values (1 = unscaled).
std::vector<float> llama3_freq_factors(const model_config& c);

}  // namespace vks::model
