// model_file: one opened model on disk, whatever its format: a .gguf file, or a Hugging
// Face directory (config.json + model.safetensors or shards listed in
// model.safetensors.index.json). Gives the config and raw tensor bytes under GGUF tensor
// names (HF names are mapped). Files stay memory-mapped while the model_file lives.
// A GGUF without tensors (vocab-only) opens with has_weights() == false: usable for the
// tokenizer only. Immutable after open(); safe to read from any thread.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/gguf.hpp"
#include "base/result.hpp"
#include "gpu/dtype.hpp"
#include "model/config.hpp"
#include "model/safetensors.hpp"

namespace vks::model {

// A weight as stored: ggml shape order (ne[0] = row length), bytes in the file mapping.
struct weight_ref {
  std::string name;                   // GGUF name, e.g. "blk.3.attn_q.weight"
  gpu::dtype type = gpu::dtype::f32;
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  int n_dims = 0;
  std::span<const std::byte> data;
  // Set when `data` was assembled on the host (HF per-expert tensors stacked into GGUF's
  // {k, n, E}): keeps it alive as long as the ref.
  std::shared_ptr<const std::vector<std::byte>> owner;
};

enum class model_format { gguf, safetensors };

class model_file {
 public:
  // path: a .gguf file or a directory (HF layout, or a directory holding one .gguf).
  static result<model_file> open(const std::string& path);

  model_format format() const { return format_; }
  const std::string& path() const { return path_; }
  bool has_weights() const { return has_weights_; }
  // Valid only if has_weights().
  const model_config& config() const { return config_; }
  // The GGUF container (metadata for the tokenizer); nullptr for HF directories.
  const gguf::file* gguf() const { return gguf_.get(); }

  bool has_tensor(std::string_view gguf_name) const;
  // errc::parse if missing, errc::unsupported if its element type is not one we run.
  result<weight_ref> tensor(std::string_view gguf_name) const;

 private:
  result<void> open_hf_dir(const std::string& dir);
  const st_tensor* find_st(std::string_view hf_name) const;
  // find_st under the names a multimodal wrapper gives its decoder: as is, then
  // "language_model." + name (transformers 4), then "model.language_model." for "model."
  // (transformers 5).
  const st_tensor* find_hf(const std::string& hf_name) const;
  result<weight_ref> hf_experts(std::string_view g, const std::string& layer, const std::string& proj) const;
  // gpt-oss's fused expert tensors (hf_gpt_oss.cpp): ffn_{gate,up,down}_exps.weight and
  // ffn_{gate,up}_exps.bias taken out of mlp.experts.gate_up_proj[_blocks/_scales/_bias]
  // (gate and up interleaved by rows) and down_proj[_blocks/_scales], in GGUF's layout.
  static bool is_gpt_oss_fused(std::string_view g);
  bool has_gpt_oss_fused(std::string_view g) const;
  result<weight_ref> gpt_oss_fused(std::string_view g) const;
  result<weight_ref> hf_fused_experts(std::string_view g, const std::string& layer, const std::string& proj) const;

  model_format format_ = model_format::gguf;
  std::string path_;
  bool has_weights_ = false;
  model_config config_;
  std::shared_ptr<gguf::file> gguf_;
  std::vector<safetensors_file> shards_;
};

// The HF safetensors name of a GGUF tensor name ("" if it has no HF counterpart).
// c (the model's config) picks the family's names: Phi-3's fused gate_up_proj is GGUF's
// ffn_up.weight; Gemma's four norms (post_attention_layernorm is its post-attention norm,
// pre_feedforward_layernorm the FFN's, unlike Llama's). Null: Llama's names.
std::string hf_tensor_name(std::string_view gguf_name, const model_config* c = nullptr);

// The model to use when --model is not given: /opt/ml/model if it exists (SageMaker), else
// the bundled demo models/stories260K.gguf next to the binary's repo or install prefix, or
// under the current directory. errc::not_found if none exists.
result<std::string> default_model_path();

}  // namespace vks::model
