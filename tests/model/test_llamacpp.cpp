// Our runner against llama.cpp (its CPU build via node-llama-cpp: the outside reference) on
// seeded models of every weight type and llama.cpp preset mix, from the committed
// distributions in tests/model/llamacpp/ (tools/llamacpp-reference/regen writes them).
// Tolerances (tolerance_for in llamacpp_reference.hpp): each position's top-20 logprobs
// within 0.02 (float weights) or 0.2 (quantized: llama.cpp also rounds the activations to
// q8 blocks there, we keep them f32) of llama.cpp's, top-1 equal at every position and the
// 16-token greedy continuation equal, except where llama.cpp's own top-2 gap is below that
// same tolerance (a near tie that rounding can flip). [vk] runs the Vulkan
// backend with the kernel family of VKS_VK_TUNING (meson runs every file with the device's
// own kernels and the preset mixes, which hold every type but q4_0/q4_1, under gpu, gpu:4,
// gpu:32, gpu:64 and cpu:ssbo); the rest runs the reference backend.
#include "catch.hpp"

#include <cstdlib>

#include "helpers.hpp"
#include "llamacpp_reference.hpp"
#include "precondition.hpp"

using namespace vks;
using namespace vks::model;
using namespace vks::model::testing;

namespace {

const bool needs_vocab = vks::test_main::require("", [] {
  const std::string v = shared_dir() + "/models/vocab/ggml-vocab-llama-spm.gguf";
  return std::filesystem::exists(v) ? std::string() : "missing " + v + " (set VKS_SHARED)";
});

const bool needs_vulkan = vks::test_main::require("vk", [] {
  auto be = gpu::make_vk_backend({});
  return be ? std::string() : "no Vulkan backend: " + be.error().message;
});

std::unique_ptr<gpu::backend> make_vk() {
  gpu::vk_options o;
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;
  auto be = gpu::make_vk_backend(o);
  REQUIRE(be.ok());
  return std::move(*be);
}

// presets: the llama.cpp preset mixes (preset-*, smollm2-*); otherwise the one-type files.
void check_all(gpu::backend& be, bool presets) {
  auto names = llamacpp_reference_names();
  std::erase_if(names, [&](const std::string& n) { return (n.find('-') != std::string::npos) != presets; });
  REQUIRE(names.size() >= 3);
  temp_dir tmp;
  for (const auto& name : names) {
    auto ref = load_llamacpp_reference(name, shared_dir());
    INFO(name << ": " << (ref ? "" : ref.error().message));
    REQUIRE(ref.ok());
    const auto tol = tolerance_for(*ref);
    const auto c = compare_with_llamacpp(*ref, be, tmp / "m.gguf", tol);
    INFO("max |logprob diff| " << c.max_logprob_diff << ", top-1 near ties " << c.top1_near_ties
                               << ", greedy steps equal " << c.greedy_compared << "; " << c.detail);
    CHECK(c.max_logprob_diff <= tol.logprob);
    CHECK(c.top1_mismatches == 0);
    CHECK(c.greedy_mismatches == 0);
    std::fprintf(stderr, "%-8s %-8s max|dlogprob| %.4f near-ties %d greedy-equal %d/%zu\n", name.c_str(),
                 be.info().name.c_str(), c.max_logprob_diff, c.top1_near_ties, c.greedy_compared, ref->greedy.size());
  }
}

}  // namespace

TEST_CASE("every weight type matches llama.cpp (ref backend)", "[llamacpp][types]") {
  auto be = gpu::make_ref_backend();
  check_all(*be, false);
}

TEST_CASE("llama.cpp's preset mixes match llama.cpp (ref backend)", "[llamacpp][presets]") {
  auto be = gpu::make_ref_backend();
  check_all(*be, true);
}

TEST_CASE("every weight type matches llama.cpp (vk backend)", "[llamacpp][vk][types]") {
  auto be = make_vk();
  check_all(*be, false);
}

TEST_CASE("llama.cpp's preset mixes match llama.cpp (vk backend)", "[llamacpp][vk][presets]") {
  auto be = make_vk();
  check_all(*be, true);
}
