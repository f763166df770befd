// The model families of #22 (YaRN rope scaling, phi3 with and without LongRoPE, smollm3, mistral3, gemma2, gemma3, gemma4, gemma4moe,
// qwen3moe, gpt-oss; #23's qwen35, qwen35moe, qwen3next)
// against llama.cpp's CPU build, through the shared comparison of llamacpp_reference.hpp
// (tests/model/llamacpp/<name>.json, written by tools/llamacpp-reference/regen): top-1 at
// every position and the greedy continuation equal except at llama.cpp's near ties, each
// position's top-20 logprobs within the float-weight tolerance. test_llamacpp.cpp runs these
// files too (ref, and vk with the device's kernels); here they run on the ref backend and
// on vk under both kernel families, `cpu` and `gpu`, whatever VKS_VK_TUNING says.
#include "catch.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "helpers.hpp"
#include "llamacpp_check.hpp"
#include "llamacpp_reference.hpp"

using namespace vks;
using namespace vks::model;
using namespace vks::model::testing;

namespace {

// skip: families checked by cases of their own (gpt-oss, under every tuning).
void check_families(gpu::backend& be, std::initializer_list<std::string_view> skip = {}) {
  temp_dir tmp;
  const char* only = std::getenv("VKS_LLAMACPP_ONLY");  // developer filter: "qwen35moe,qwen3next"
  const std::string list = only ? "," + std::string(only) + "," : "";
  for (const auto& name : family_reference_names())
    if (std::find(skip.begin(), skip.end(), name) == skip.end() && (!only || list.find("," + name + ",") != std::string::npos))
      check_llamacpp_reference(be, name, tmp / "m.gguf");
}

}  // namespace

TEST_CASE("model families match llama.cpp's CPU build (ref backend)", "[llamacpp][families]") {
  auto be = gpu::make_ref_backend();
  check_families(*be);
}

TEST_CASE("model families match llama.cpp's CPU build (vk, cpu and gpu tunings)", "[llamacpp][vk][families]") {
  // Developer override: VKS_FAMILIES_TUNINGS="cpu,cpu:ssbo,cpu:loads,gpu,gpu:4,gpu:32,gpu:64".
  std::vector<std::string> tunings = {"cpu", "gpu"};
  if (const char* t = std::getenv("VKS_FAMILIES_TUNINGS")) {
    tunings.clear();
    for (std::string rest = t; !rest.empty();) {
      const auto comma = rest.find(',');
      tunings.push_back(rest.substr(0, comma));
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    }
  }
  for (const auto& tuning : tunings) {
    gpu::vk_options o;
    o.tuning = tuning;
    auto be = gpu::make_vk_backend(o);
    REQUIRE(be.ok());
    INFO("tuning " << tuning);
    check_families(**be, {"gpt-oss"});
  }
}

// gpt-oss (sinks in every attention kernel, windows on alternate layers, expert biases, the
// clamped SwiGLU, softmax over the selected experts, YaRN) under every kernel family and tiling.
TEST_CASE("gpt-oss matches llama.cpp's CPU build under every vk tuning", "[llamacpp][vk][families][gpt-oss]") {
  temp_dir tmp;
  for (auto tuning : {"cpu", "cpu:ssbo", "gpu", "gpu:4", "gpu:32", "gpu:64"}) {
    gpu::vk_options o;
    o.tuning = tuning;
    auto be = gpu::make_vk_backend(o);
    REQUIRE(be.ok());
    INFO("tuning " << tuning);
    check_llamacpp_reference(**be, "gpt-oss", tmp / "m.gguf");
  }
}

// gemma4 (sliding layers from a bool array with a partial rope, the global layers' rope
// divided by rope_freqs, V normed without weight and taken from K's projection on layer 3,
// KV-shared layers 4-5, per-layer embeddings whose projection reads row slices of one
// weight, the output scale) under every kernel family and tiling. Hidden from CI (the
// families case above runs gemma4 on ref and under the cpu and gpu tunings, as gemma3);
// run it with `test_llamacpp "[gemma4]"` (~20 s of CPU on lavapipe) after touching the
// layer or the kernels it uses.
TEST_CASE("gemma4 matches llama.cpp's CPU build under every vk tuning", "[.][llamacpp][vk][gemma4]") {
  temp_dir tmp;
  for (auto tuning : {"cpu", "cpu:ssbo", "gpu", "gpu:4", "gpu:32", "gpu:64"}) {
    gpu::vk_options o;
    o.tuning = tuning;
    auto be = gpu::make_vk_backend(o);
    REQUIRE(be.ok());
    INFO("tuning " << tuning);
    check_llamacpp_reference(**be, "gemma4", tmp / "m.gguf");
  }
}

// gemma4moe (26B-A4B's layer: a dense FFN beside 8 gelu experts of which 2 per token, the
// router on its own scaled norm, per-expert output scales, the branches' norms; sliding
// layers with window 8) under every kernel family and tiling. Hidden from CI like gemma4's
// (the families case above runs it on ref and under the cpu and gpu tunings); run it with
// `test_llamacpp "[gemma4moe]"` after touching model/gemma4_moe or the expert kernels.
TEST_CASE("gemma4moe matches llama.cpp's CPU build under every vk tuning", "[.][llamacpp][vk][gemma4moe]") {
  temp_dir tmp;
  for (auto tuning : {"cpu", "cpu:ssbo", "cpu:loads", "gpu", "gpu:4", "gpu:32", "gpu:64"}) {
    gpu::vk_options o;
    o.tuning = tuning;
    auto be = gpu::make_vk_backend(o);
    REQUIRE(be.ok());
    INFO("tuning " << tuning);
    check_llamacpp_reference(**be, "gemma4moe", tmp / "m.gguf");
  }
}
