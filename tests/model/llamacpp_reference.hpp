// The outside reference of the weight-type tests: llama.cpp's next-token distributions
// (tests/model/llamacpp/<name>.json, written by tools/llamacpp-reference/regen from llama.cpp's
// CPU build) for a seeded model that make-test-model wrote, and the comparison of our runner
// against them. The model is regenerated here from the spec stored in the JSON (the
// generator is deterministic), so no model file is committed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "gpu/backend.hpp"
#include "testing/test_model.hpp"

namespace vks::model::testing {

struct llamacpp_position {
  int32_t top1 = -1;
  double gap = 0;                                // llama.cpp's logprob gap between its best two
  std::vector<std::pair<int32_t, double>> top;   // best first: (token, logprob)
};

struct llamacpp_reference {
  std::string name;        // file stem, e.g. "Q4_K_M"
  test_model_spec spec;    // how the model was made (shape, type or preset, layers, seed, vocab)
  gpu::dtype kv_type = gpu::dtype::f32;  // our KV cache: the spec's kv_cache_dtype (llama.cpp ran
                                         // with that K/V type), else f32 (llama.cpp's f16 default)
  int n_vocab = 0;
  std::vector<int32_t> tokens;
  std::vector<llamacpp_position> positions;  // one per token: the distribution of the next
  std::vector<int32_t> greedy;               // llama.cpp's greedy continuation after `tokens`
  std::vector<double> greedy_gap;
};

// Reads tests/model/llamacpp/<name>.json (under $VKS_SOURCE_ROOT); the spec's vocab path is
// resolved under `shared` ($VKS_SHARED).
result<llamacpp_reference> load_llamacpp_reference(const std::string& name, const std::string& shared);
// Every reference name in tests/model/llamacpp/, sorted.
std::vector<std::string> llamacpp_reference_names();
// The model-family references (test_families.cpp), a subset of the names above that the
// weight-type cases skip.
std::vector<std::string> family_reference_names();

// Tolerances of the comparison. A position's top-1 or a greedy step may differ only where
// llama.cpp's own top-2 gap is below `near_tie`.
struct llamacpp_tolerance {
  double logprob = 0.02;   // max |our logprob - llama.cpp's| over each position's top-N tokens
  double near_tie = 0.02;
};
// The tolerance for a reference: 0.02 where every weight is f32/f16/bf16 (llama.cpp's f16 KV
// cache is then the only difference: ~0.004 measured); 0.2 where any weight is quantized,
// because llama.cpp's CPU dot products quantize the activations too (to q8_0/q8_1 blocks of
// 32, or q8_K blocks of 256 for the k-quants and iq4_xs) while we keep them f32: measured
// 0.05 (q5_1) to 0.15 (the 8-layer Q3_K_M mix) on these models, whose logits are O(1).
// A q8_0 KV cache (f32 weights; kv_q8_0.json): 0.1. Both sides store K and V as the same
// q8_0 blocks, but llama.cpp's CPU flash attention also rounds each query to q8_0 blocks for
// the q.k dot, noise of the size of the cache's own: measured 0.050 (ours q8_0 vs its
// q8_0), 0.043 (our f32 cache vs its q8_0), 0.041 (our q8_0 vs its f16 cache).
// Quantized MoE files: 0.3. The router's top-k is discontinuous: where two experts' scores
// nearly tie, llama.cpp's rounded activations can pick the other one, and that position
// (and, through its K/V, the later ones) moves by far more than the rounding. Measured on
// tiny-qwen3moe q8_0 (4 layers): 0.21 at one position, <= 0.16 elsewhere; the Q4_K_M mix
// showed isolated jumps of 1.3-1.7 (such flips) and is compared with our reference backend
// only (tests/model/test_vk.cpp), not here.
// gpt-oss in f32: 0.04. Its 4 of 8 experts are mixed by a softmax over their router logits,
// which moves with llama.cpp's f16 K/V rounding: most positions within 0.006, single ones
// at 0.030 (gpt-oss.json, seed 11) and 0.016 (seed 12).
llamacpp_tolerance tolerance_for(const llamacpp_reference& ref);

struct llamacpp_comparison {
  double max_logprob_diff = 0;
  int top1_mismatches = 0;      // positions whose top-1 differs although the gap exceeds near_tie
  int top1_near_ties = 0;       // differing top-1 at documented near ties (allowed)
  int greedy_compared = 0;      // greedy steps compared before any allowed divergence
  int greedy_mismatches = 0;    // steps that differ although llama.cpp's gap exceeds near_tie
  std::string detail;           // first problems, for the failure message
};

// Writes the model of `ref` (its make-test-model spec: seeded, deterministic) to `path`.
void write_reference_model(const llamacpp_reference& ref, const std::string& path);

// Loads the model that write_reference_model put at `path` on `be`, runs ref.tokens
// teacher-forced (one prefill: the matmul kernels) and the greedy continuation (one token per
// step: matvec), and compares with llama.cpp. The file is only read: one written model serves
// every backend and tuning it is checked on.
llamacpp_comparison compare_with_llamacpp(const llamacpp_reference& ref, gpu::backend& be, const std::string& path,
                                          const llamacpp_tolerance& tol);

}  // namespace vks::model::testing
