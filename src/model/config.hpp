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

struct model_config {
  std::string arch;          // "llama" | "qwen2" | "qwen3"
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
  bool tied_embeddings = false;  // lm head reuses token_embd
  bool qkv_bias = false;         // qwen2
  bool qk_norm = false;          // qwen3: per-head RMSNorm of q and k before RoPE
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

// Pooling of a sentence-transformers checkpoint from its Pooling module's config.json text
// (pooling_mode_mean_tokens / _cls_token / _lasttoken): 1, 2 or 3; -1 when it names none
// of those (or is not valid JSON).
int pooling_from_sentence_transformers(std::string_view pooling_config_json);

// Per-frequency divisors for llama3 RoPE scaling: n_dims/2 values (1 = unscaled).
std::vector<float> llama3_freq_factors(const model_config& c);

}  // namespace vks::model
