// Our runner against llama.cpp (its CPU build via node-llama-cpp: the outside reference) on
// seeded models of every weight type and llama.cpp preset mix, from the committed
// distributions in tests/model/llamacpp/ (tools/llamacpp-reference/regen writes them).
// Tolerances (tolerance_for in llamacpp_reference.hpp): each position's top-20 logprobs
// within 0.02 (float weights) or 0.2 (quantized: llama.cpp also rounds the activations to
// q8 blocks there, we keep them f32) of llama.cpp's, top-1 equal at every position and the
// 16-token greedy continuation equal, except where llama.cpp's own top-2 gap is below that
// same tolerance (a near tie that rounding can flip). [vk] runs the Vulkan
// backend with the kernel family of VKS_VK_TUNING (meson runs every file with the device's
// own kernels and the preset mixes, which hold every type but q4_0/q4_1 and iq1_m, under gpu, gpu:4,
// gpu:32, gpu:64 and cpu:ssbo; the model families of test_families.cpp run under every tuning in
// meson entries of their own); the rest runs the reference backend. VKS_LLAMACPP_ONLY (a
// comma-separated list of reference names) restricts a run to those, for development.
#include "catch.hpp"

#include <algorithm>
#include <cstdlib>

#include "helpers.hpp"
#include "llamacpp_check.hpp"
#include "llamacpp_reference.hpp"
#include "precondition.hpp"
#include "testing/presets.hpp"

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
  const auto families = family_reference_names();  // test_families.cpp runs those
  std::erase_if(names, [&](const std::string& n) {
    return (n.find('-') != std::string::npos) != presets || std::ranges::find(families, n) != families.end() ||
           n.rfind("kv_", 0) == 0;  // kv_*: check_kv_cache
  });
  REQUIRE(names.size() >= 3);
  if (const char* only = std::getenv("VKS_LLAMACPP_ONLY")) {  // developer filter: "iq2_xxs,preset-IQ1_S"
    const std::string list = "," + std::string(only) + ",";
    std::erase_if(names, [&](const std::string& n) { return list.find("," + n + ",") == std::string::npos; });
  }
  temp_dir tmp;
  for (const auto& name : names) check_llamacpp_reference(be, name, tmp / "m.gguf");
}

// The kv_* references: llama.cpp run with a quantized K/V cache, our runner with the same.
void check_kv_cache(gpu::backend& be) {
  temp_dir tmp;
  int n = 0;
  for (const auto& name : llamacpp_reference_names()) {
    if (name.rfind("kv_", 0) != 0) continue;
    ++n;
    check_llamacpp_reference(be, name, tmp / "m.gguf");
  }
  CHECK(n >= 1);
}

}  // namespace

TEST_CASE("a q8_0 KV cache matches llama.cpp's q8_0 KV cache (ref backend)", "[llamacpp][kvq8]") {
  auto be = gpu::make_ref_backend();
  check_kv_cache(*be);
}

TEST_CASE("a q8_0 KV cache matches llama.cpp's q8_0 KV cache (vk, cpu and gpu tunings)", "[llamacpp][vk][kvq8]") {
  for (const char* tuning : {"cpu", "gpu"}) {
    INFO("tuning " << tuning);
    gpu::vk_options o;
    o.tuning = tuning;
    auto be = gpu::make_vk_backend(o);
    REQUIRE(be.ok());
    check_kv_cache(**be);
  }
}

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

TEST_CASE("preset mixes pick llama.cpp's per-tensor types", "[llamacpp][presets-rules]") {
  using gpu::dtype;
  auto smol = test_model_shape("smollm2-135m");  // 30 layers, rows of 576 (not 256-divisible) and 1536
  REQUIRE(smol.ok());
  const auto& c = smol->config;
  // Tied embeddings are the output: q6_K unless the block does not divide the row (q8_0).
  CHECK(preset_tensor_type("Q4_K_M", c, "token_embd.weight", 576) == dtype::q8_0);
  // ffn_down: q6_K in use_more_bits layers (0..2, 26..29, and every third from 5), else q4_K.
  CHECK(preset_tensor_type("Q4_K_M", c, "blk.0.ffn_down.weight", 1536) == dtype::q6_K);
  CHECK(preset_tensor_type("Q4_K_M", c, "blk.4.ffn_down.weight", 1536) == dtype::q4_K);
  CHECK(preset_tensor_type("Q4_K_M", c, "blk.5.ffn_down.weight", 1536) == dtype::q6_K);
  CHECK(preset_tensor_type("Q4_K_M", c, "blk.27.ffn_down.weight", 1536) == dtype::q6_K);
  // Rows of 576: the k-quant falls back (q4_K -> q5_0, q5_K -> q5_1, iq4_xs -> iq4_nl, q3_K -> q4_0).
  CHECK(preset_tensor_type("Q4_K_M", c, "blk.4.attn_q.weight", 576) == dtype::q5_0);
  CHECK(preset_tensor_type("Q4_K_M", c, "blk.0.attn_v.weight", 576) == dtype::q8_0);  // q6_K -> q8_0
  CHECK(preset_tensor_type("Q5_K_M", c, "blk.4.attn_q.weight", 576) == dtype::q5_1);
  CHECK(preset_tensor_type("IQ4_XS", c, "blk.4.attn_q.weight", 576) == dtype::iq4_nl);
  CHECK(preset_tensor_type("Q2_K", c, "blk.4.attn_v.weight", 576) == dtype::q4_0);    // q3_K (GQA 3) -> q4_0
  CHECK(preset_tensor_type("Q2_K", c, "blk.4.ffn_down.weight", 1536) == dtype::q3_K);
  CHECK(preset_tensor_type("Q3_K_M", c, "blk.0.ffn_down.weight", 1536) == dtype::q5_K);  // i < n/16
  CHECK(preset_tensor_type("Q3_K_M", c, "blk.9.ffn_down.weight", 1536) == dtype::q4_K);
  CHECK(preset_tensor_type("IQ4_XS", c, "blk.1.ffn_down.weight", 1536) == dtype::q5_K);  // i < n/8
  CHECK(preset_tensor_type("IQ4_XS", c, "blk.9.ffn_down.weight", 1536) == dtype::iq4_xs);
  CHECK(preset_tensor_type("MXFP4", c, "blk.3.ffn_up.weight", 576) == dtype::mxfp4);
  CHECK(preset_tensor_type("MXFP4", c, "blk.3.attn_k.weight", 576) == dtype::q8_0);
  // GQA >= 4 bumps attn_v for Q2_K and IQ4_XS (llama3.2-1b: 32/8 heads, rows of 2048).
  auto l1b = test_model_shape("llama3.2-1b");
  REQUIRE(l1b.ok());
  CHECK(preset_tensor_type("Q2_K", l1b->config, "blk.3.attn_v.weight", 2048) == dtype::q4_K);
  CHECK(preset_tensor_type("IQ4_XS", l1b->config, "blk.3.attn_v.weight", 2048) == dtype::q5_K);
  CHECK(preset_tensor_type("IQ2_XXS", l1b->config, "blk.3.attn_v.weight", 2048) == dtype::q4_K);
}

TEST_CASE("the low-bit i-quant mixes pick llama.cpp's per-tensor types", "[llamacpp][presets-rules]") {
  using gpu::dtype;
  auto tiny = test_model_shape("tiny-llama");  // GQA 2, rows of 256 and 512
  REQUIRE(tiny.ok());
  auto c = tiny->config;
  c.n_layer = 8;
  // Untied output q5_K, token_embd q2_K (iq3_s for IQ3_XXS), attn_v q2_K below GQA 4.
  CHECK(preset_tensor_type("IQ2_XXS", c, "output.weight", 256) == dtype::q5_K);
  CHECK(preset_tensor_type("IQ2_XXS", c, "token_embd.weight", 256) == dtype::q2_K);
  CHECK(preset_tensor_type("IQ2_XXS", c, "blk.3.attn_v.weight", 256) == dtype::q2_K);
  CHECK(preset_tensor_type("IQ2_XXS", c, "blk.0.ffn_down.weight", 512) == dtype::q2_K);  // i < n/8
  CHECK(preset_tensor_type("IQ2_XXS", c, "blk.3.ffn_down.weight", 512) == dtype::iq2_xxs);
  CHECK(preset_tensor_type("IQ1_S", c, "blk.3.attn_output.weight", 256) == dtype::iq2_xxs);
  CHECK(preset_tensor_type("IQ1_S", c, "blk.3.ffn_up.weight", 256) == dtype::iq1_s);
  CHECK(preset_tensor_type("IQ1_M", c, "blk.3.ffn_gate.weight", 256) == dtype::iq1_m);
  CHECK(preset_tensor_type("IQ2_M", c, "blk.3.attn_output.weight", 256) == dtype::iq3_s);
  CHECK(preset_tensor_type("IQ3_XXS", c, "token_embd.weight", 256) == dtype::iq3_s);
  CHECK(preset_tensor_type("IQ3_XXS", c, "blk.3.attn_q.weight", 256) == dtype::iq2_s);
  CHECK(preset_tensor_type("IQ3_XXS", c, "blk.3.attn_v.weight", 256) == dtype::iq3_s);
  CHECK(preset_tensor_type("IQ3_XXS", c, "blk.0.ffn_down.weight", 512) == dtype::q4_K);
  CHECK(preset_tensor_type("IQ3_XXS", c, "blk.3.ffn_down.weight", 512) == dtype::q3_K);
  CHECK(preset_tensor_type("IQ3_XXS", c, "blk.3.ffn_up.weight", 256) == dtype::iq3_xxs);
  // UD-Q2_K_XL: edge layers at 4-8 bits, i-quants by tensor in the middle.
  CHECK(preset_tensor_type("UD-Q2_K_XL", c, "blk.0.attn_v.weight", 256) == dtype::q8_0);
  CHECK(preset_tensor_type("UD-Q2_K_XL", c, "blk.7.ffn_down.weight", 512) == dtype::q6_K);
  CHECK(preset_tensor_type("UD-Q2_K_XL", c, "blk.3.attn_q.weight", 256) == dtype::iq3_xxs);
  CHECK(preset_tensor_type("UD-Q2_K_XL", c, "blk.3.attn_k.weight", 256) == dtype::iq3_s);
  CHECK(preset_tensor_type("UD-Q2_K_XL", c, "blk.3.attn_output.weight", 256) == dtype::iq2_s);
  CHECK(preset_tensor_type("UD-Q2_K_XL", c, "blk.3.ffn_gate.weight", 256) == dtype::iq2_xxs);
  CHECK(preset_tensor_type("UD-Q2_K_XL", c, "blk.3.ffn_up.weight", 256) == dtype::iq2_xs);
  CHECK(preset_tensor_type("UD-Q2_K_XL", c, "blk.3.ffn_down.weight", 512) == dtype::q2_K);
  // Rows the 256-block does not divide: the i-quants fall back to iq4_nl.
  CHECK(preset_tensor_type("UD-Q2_K_XL", c, "blk.3.attn_q.weight", 576) == dtype::iq4_nl);
}
