// The model families of #22 (YaRN rope scaling, phi3 with and without LongRoPE, smollm3, mistral3, gemma2, gemma3, gemma4, gemma4moe,
// qwen3moe, gpt-oss; #23's qwen35, qwen35moe, qwen3next)
// against llama.cpp's CPU build, through the shared comparison of llamacpp_reference.hpp
// (tests/model/llamacpp/<name>.json, written by tools/llamacpp-reference/regen): top-1 at
// every position and the greedy continuation equal except at llama.cpp's near ties, each
// position's top-20 logprobs within the float-weight tolerance. Here they run on the ref
// backend and on vk under every kernel tuning (k_all_tunings; VKS_FAMILIES_TUNINGS picks some:
// meson splits them over a few processes that run in parallel). Each family's model is
// written once per process and loaded under each tuning: the generator costs as much as a
// whole `cpu`-tuning comparison.
#include "catch.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "helpers.hpp"
#include "llamacpp_check.hpp"
#include "llamacpp_reference.hpp"

using namespace vks;
using namespace vks::model;
using namespace vks::model::testing;

namespace {

// Every kernel tuning of gpu/vk/tuning.hpp that changes which kernels a model runs: the CPU
// rows (texel kernels; storage buffers; storage buffers without the subgroup broadcast of
// q8_0 activations) and the generic GPU row with the device's lanes per matmul row and with
// 4, 32 and 64 (the tilings of other devices' subgroups).
const std::vector<std::string> k_all_tunings = {"cpu", "cpu:ssbo", "cpu:loads", "gpu", "gpu:4", "gpu:32", "gpu:64"};

// "a,b,c" -> {"a", "b", "c"}.
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  for (std::string rest = s; !rest.empty();) {
    const auto comma = rest.find(',');
    out.push_back(rest.substr(0, comma));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  return out;
}

// The family references (VKS_LLAMACPP_ONLY, a comma-separated list, restricts them: a
// developer filter), each loaded and its model written once into a temporary directory.
struct family_models {
  temp_dir tmp;
  std::vector<std::pair<llamacpp_reference, std::string>> items;  // reference, model path

  family_models() {
    const char* only = std::getenv("VKS_LLAMACPP_ONLY");  // "qwen35moe,qwen3next"
    const auto wanted = only ? split_list(only) : std::vector<std::string>();
    for (const auto& name : family_reference_names()) {
      if (only && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
      auto ref = load_llamacpp_reference(name, shared_dir());
      INFO(name << ": " << (ref ? "" : ref.error().message));
      REQUIRE(ref.ok());
      const std::string path = tmp / (name + ".gguf");
      write_reference_model(*ref, path);
      items.emplace_back(std::move(*ref), path);
    }
  }
};

}  // namespace

TEST_CASE("model families match llama.cpp's CPU build (ref backend)", "[llamacpp][families]") {
  auto be = gpu::make_ref_backend();
  const family_models models;
  for (const auto& [ref, path] : models.items) check_llamacpp_reference(*be, ref, path);
}

// gpt-oss (sinks in every attention kernel, windows on alternate layers, expert biases, the
// clamped SwiGLU, softmax over the selected experts, YaRN), gemma4 (sliding layers from a
// bool array with a partial rope, V from K's projection, KV-shared layers, per-layer
// embeddings), the hybrid DeltaNet models and the rest: every family under every tuning.
TEST_CASE("model families match llama.cpp's CPU build under every vk tuning", "[llamacpp][vk][families]") {
  const char* t = std::getenv("VKS_FAMILIES_TUNINGS");  // "cpu,cpu:ssbo" (meson: a share of the tunings)
  const auto tunings = t && *t ? split_list(t) : k_all_tunings;
  const family_models models;
  for (const auto& tuning : tunings) {
    gpu::vk_options o;
    o.tuning = tuning;
    auto be = gpu::make_vk_backend(o);
    INFO("tuning " << tuning << ": " << (be ? "" : be.error().message));
    REQUIRE(be.ok());
    for (const auto& [ref, path] : models.items) check_llamacpp_reference(**be, ref, path, tuning);
  }
}
