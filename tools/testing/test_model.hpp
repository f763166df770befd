// Seeded-random model files for tests and benchmarks (no downloads): GGUF files in any
// weight type we run and Hugging Face safetensors directories (f32/f16/bf16, single or
// sharded), with the real shapes of published models or tiny variants. Weights:
// projections N(0, 1/K) (K = input features, so activations keep unit scale through every
// matmul) and embeddings N(0, 1/C) (tied logits stay O(1)), norms 1 + N(0, 0.05), biases N(0, 0.1). Deterministic for a
// seed: each tensor's values depend only on (seed, tensor name).
// Tensor bytes are produced one tensor at a time: an 8B model never sits in host memory.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gpu/dtype.hpp"
#include "model/config.hpp"

namespace vks::model {

struct test_model_spec {
  std::string shape_name;                     // e.g. "smollm2-135m", "tiny-qwen3"
  model_config config;
  gpu::dtype weight_type = gpu::dtype::f32;   // 2-D weights; 1-D tensors are always f32
  // A llama.cpp preset name (testing/presets.hpp: Q4_K_M, Q5_K_M, ...): per-tensor types as
  // llama.cpp's quantizer picks them, overriding weight_type for 2-D weights. Empty: none.
  std::string preset;
  // MoE expert stacks in this type, over weight_type and preset (gpt-oss's HF checkpoints keep
  // them mxfp4 and the rest bf16: write_test_hf writes mxfp4 as its _blocks / _scales).
  std::optional<gpu::dtype> expert_type;
  uint64_t seed = 1;
  // Copy tokenizer.ggml.* from this GGUF (e.g. a vocab-only file; n_vocab becomes its token
  // count, as llama.cpp requires); empty: a synthetic SentencePiece-style vocab of
  // config.n_vocab tokens (specials, 256 bytes, letters).
  std::string vocab_gguf;
  std::string chat_template;  // written as tokenizer.chat_template when non-empty (replaces the vocab's)
  // write_test_hf's HF class where a family has several (testing/hf_gemma_writer.hpp):
  // "Gemma3ForConditionalGeneration" or "Gemma4ForCausalLM"; empty: the family's usual one.
  std::string hf_class;
};

// Named shapes: smollm2-135m, qwen2.5-0.5b, qwen3-0.6b, llama3.2-1b, llama3.1-8b (published
// configs) and tiny-llama, tiny-qwen2, tiny-qwen3 (2 layers, C 256, H 4/2, D 64, F 512,
// V 512: every weight type's block size divides the rows), and with the same widths the
// #22 families: tiny-llama-yarn (YaRN x4 over 64 positions), tiny-phi3 (fused qkv and
// gate_up), tiny-smollm3 (4 layers, layer 3 without rope), tiny-mistral3 (YaRN),
// tiny-gemma2 (4 layers, window 8, soft-caps 1.5 / 5), tiny-gemma3 (6 layers, window 8 on
// layers 0-4), tiny-gemma4 (6 layers: sliding 0-2 and 4, KV shared by 4 and 5, layer 3's V
// = K, per-layer embeddings of 64, partial sliding rope, proportional global rope),
// tiny-gemma4-wide (tiny-gemma4 with global heads of 64 / 1 KV head and sliding heads of 32 /
// 2 KV heads, as the published Gemma 4s differ per layer kind), tiny-gemma4-512 (the same with
// the published widths: global heads of 512, sliding ones of 256), tiny-gemma4-e2b (-wide with
// E2B's double-wide MLP: the KV-shared layers 4 and 5 at 1024, the others at 512),
// tiny-gemma4moe (5 layers: sliding 0, 1, 3, global 2 and 4, a dense FFN of 512 beside 8
// experts of 256 with 2 per token, per-expert output scales), tiny-phi3-longrope / tiny-phi3-longrope-short (LongRoPE factor tensors with
// an original context of 32 / 1024: a test context picks the long / short factors),
// tiny-qwen3moe (4 layers, 8 experts of 256, 2 per token, router kept f32),
// qwen3moe-small (24 layers, C 576, 8 experts of 256, V 49152: the decode benchmark's MoE
// shape), tiny-gpt-oss (4 layers, C 256, H 8/2, D 64, 8 experts of 256, 4 per token, window
// 8 on layers 0 and 2, YaRN x4 over 64 positions, sinks and every gpt-oss bias; experts MXFP4
// under --preset MXFP4), tiny-qwen35 (4 layers: 3 gated DeltaNet (2 key / 4 value heads of 64, conv 4)
// then 1 gated attention layer with rope on 16 of 64 dims), qwen35-small (12 layers, C 512,
// 4 key / 8 value heads of 64: the agent-loop benchmark's hybrid). errc::not_found for others.
result<test_model_spec> test_model_shape(std::string_view name);
std::vector<std::string> test_model_shape_names();

// The weight type actually used for a matrix with rows of n_cols elements: `want` if its
// block size divides n_cols, else q8_0 if 32 does, else f16 (llama.cpp falls back the same way).
gpu::dtype effective_weight_type(gpu::dtype want, int64_t n_cols);

result<void> write_test_gguf(const test_model_spec& spec, const std::string& path);
// A HF directory: config.json + model.safetensors (n_shards == 1) or n_shards files
// model-0000i-of-0000n.safetensors + model.safetensors.index.json. weight_type must be
// f32, f16 or bf16 (expert_type: unset, or mxfp4 for gpt-oss). gpt-oss is written in
// GptOssForCausalLM's layout (fused, row-interleaved gate_up_proj; sinks; router). Creates the
// directory. The Qwen3.5 family is written as its published
// checkpoints are: qwen35 as Qwen3_5ForCausalLM, qwen35moe as the multimodal
// Qwen3_5MoeForConditionalGeneration (text_config, model.language_model.*, fused expert stacks),
// qwen3next with in_proj_qkvz / in_proj_ba and per-expert tensors. Gemma 3 / Gemma 4: see
// testing/hf_gemma_writer.hpp.
result<void> write_test_hf(const test_model_spec& spec, const std::string& dir, int n_shards = 1);

}  // namespace vks::model
