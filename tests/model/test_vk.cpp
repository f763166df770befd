// The Vulkan backend against the reference backend on whole models (tag [vk]; meson runs
// these as the separate test 'model-vk', which skips whole (exit 77, before any test) when no
// Vulkan device/backend is available). Tolerance: every logit of every position within 1e-2 * max(1, max|ref logit|)
// (both backends dequantise the same bytes and accumulate in f32 or better; the slack covers
// summation order), and greedy tokens agree wherever ref's top-2 gap exceeds twice that.
#include "catch.hpp"

#include <cstdio>
#include <cstdlib>

#include "base/mapped_file.hpp"
#include "gpu/ref/ref_q8_1.hpp"
#include "helpers.hpp"
#include "precondition.hpp"
#include "model/model_file.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace vks;
using namespace vks::model;
using namespace vks::model::testing;

namespace {

const bool needs_vulkan = vks::test_main::require("vk", [] {
  auto be = gpu::make_vk_backend({});
  return be ? std::string() : "no Vulkan backend: " + be.error().message;
});

// The precondition held, so a backend that cannot be made now is a failure. tuning: as
// gpu::vk_options::tuning ("" = by device kind).
std::unique_ptr<gpu::backend> make_vk(const std::string& tuning = "") {
  gpu::vk_options o;
  o.tuning = tuning;
  auto be = gpu::make_vk_backend(o);
  REQUIRE(be.ok());
  return std::move(*be);
}

constexpr float k_tol = 1e-2f;

}  // namespace

TEST_CASE("vk: stories260K greedy output equals llama2.c's", "[vk]") {
  // Both kernel families: the CPU (texel) kernels and the GPU ones (lane reductions, fused
  // SwiGLU and add+norm on storage buffers) forced on this device.
  const std::string tuning = GENERATE(as<std::string>{}, "cpu", "gpu");
  INFO("tuning " << tuning);
  auto be = make_vk(tuning);
  const std::string dir = shared_dir() + "/models/stories260K/";
  auto expected = read_file(dir + "expected_greedy_t0_llama2c.txt");
  REQUIRE(expected.ok());
  std::string want = expected->substr(expected->find('\n') + 1);
  while (!want.empty() && want.back() == '\n') want.pop_back();
  auto f = model_file::open(dir + "stories260K.gguf");
  REQUIRE(f.ok());
  auto tok = text::tokenizer::from_gguf(*f->gguf());
  REQUIRE(tok.ok());
  auto r = load_runner(dir + "stories260K.gguf", *be, 272, 1);
  kv_sequence seq;
  REQUIRE(r->kv().reserve(seq, 257).ok());
  std::vector<int32_t> ids = {(*tok)->bos()};
  text::incremental_decoder dec(**tok);
  std::string got;
  for (int i = 0; i < 256; ++i) {
    batch b;
    b.block_tables.push_back(seq.blocks);
    b.add_tokens(0, std::span(ids).last(1), static_cast<int32_t>(ids.size() - 1), true);
    auto l = r->forward(b);
    REQUIRE(l.ok());
    ids.push_back(argmax(*l));
    got += dec.push(ids.back());
  }
  got += dec.flush();
  CHECK(got.substr(0, want.size()) == want);
}

TEST_CASE("vk logits match ref for every architecture and weight type", "[vk]") {
  auto vk = make_vk();
  temp_dir tmp;
  using gpu::dtype;
  for (auto shape : {"tiny-llama", "tiny-llama3", "tiny-qwen2", "tiny-qwen3", "tiny-llama-yarn", "tiny-phi3",
                      "tiny-smollm3", "tiny-mistral3", "tiny-gemma2", "tiny-gemma3", "tiny-qwen3moe"})
    for (auto t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q8_0, dtype::q4_0, dtype::q4_K, dtype::q6_K}) {
      auto spec = tiny_spec(shape, t);
      const std::string path = tmp / "m.gguf";
      REQUIRE(write_test_gguf(spec, path).ok());
      auto ref_be = gpu::make_ref_backend();
      auto toks = test_tokens(64, spec.config.n_vocab, 11);
      // 64 positions: a 32-token prefill, then 32 decode steps.
      auto ref = sequence_logits(*load_runner(path, *ref_be, 64, 1), toks, 32);
      auto got = sequence_logits(*load_runner(path, *vk, 64, 1), toks, 32);
      auto d = compare(got, ref);
      const float tol = k_tol * std::max(1.f, d.max_abs_ref);
      INFO(shape << " " << gpu::traits(t).name << ": max |vk - ref| " << d.max_abs_diff << ", max |ref| " << d.max_abs_ref);
      CHECK(d.max_abs_diff <= tol);
      CHECK(greedy_disagreements(got, ref, spec.config.n_vocab, 2 * tol) == 0);
    }
}

namespace {

// Three sequences (3, 20 and 37 tokens) prefilled in one step, as continuous batching mixes
// them, give each sequence's logits alone (within 1e-3 of the largest).
void check_batched_equals_alone(runner& r, int V) {
  std::vector<std::vector<int32_t>> seqs = {test_tokens(3, V, 1), test_tokens(20, V, 2), test_tokens(37, V, 3)};
  std::vector<std::vector<float>> alone;
  for (auto& s : seqs) alone.push_back(sequence_logits(r, s, s.size()));
  std::vector<kv_sequence> kv(3);
  batch b;
  for (size_t i = 0; i < 3; ++i) {
    REQUIRE(r.kv().reserve(kv[i], static_cast<int>(seqs[i].size())).ok());
    b.block_tables.push_back(kv[i].blocks);
  }
  for (size_t i = 0; i < 3; ++i) {
    const size_t row0 = b.tokens.size();
    b.add_tokens(static_cast<int32_t>(i), seqs[i], 0, false);
    for (size_t k = 0; k < seqs[i].size(); ++k) b.logit_rows.push_back(static_cast<int32_t>(row0 + k));
  }
  auto l = r.forward(b);
  REQUIRE(l.ok());
  size_t at = 0;
  for (size_t i = 0; i < 3; ++i) {
    std::vector<float> mine(l->begin() + static_cast<long>(at), l->begin() + static_cast<long>(at + alone[i].size()));
    at += alone[i].size();
    auto d = compare(mine, alone[i]);
    INFO("sequence " << i << ": max diff " << d.max_abs_diff);
    CHECK(d.max_abs_diff <= 1e-3f * std::max(1.f, d.max_abs_ref));
  }
}

}  // namespace

TEST_CASE("vk: batched sequences equal each sequence alone", "[vk]") {
  auto vk = make_vk();
  temp_dir tmp;
  auto spec = tiny_spec("tiny-qwen2", gpu::dtype::q8_0);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto r = load_runner(tmp / "m.gguf", *vk, 64, 4);
  const int V = spec.config.n_vocab;
  check_batched_equals_alone(*r, V);
}

TEST_CASE("vk: generated models' greedy tokens agree with ref under both tunings", "[vk]") {
  temp_dir tmp;
  using gpu::dtype;
  for (const std::string tuning : {"cpu", "gpu"}) {
    auto vk = make_vk(tuning);
    for (auto shape : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"})
      for (auto t : {dtype::f16, dtype::q8_0}) {
        auto spec = tiny_spec(shape, t);
        const std::string path = tmp / "m.gguf";
        REQUIRE(write_test_gguf(spec, path).ok());
        auto ref_be = gpu::make_ref_backend();
        auto toks = test_tokens(40, spec.config.n_vocab, 5);
        auto ref = sequence_logits(*load_runner(path, *ref_be, 64, 1), toks, 8);
        auto got = sequence_logits(*load_runner(path, *vk, 64, 1), toks, 8);
        auto d = compare(got, ref);
        const float tol = k_tol * std::max(1.f, d.max_abs_ref);
        INFO(tuning << " " << shape << " " << gpu::traits(t).name << ": max |vk - ref| " << d.max_abs_diff);
        CHECK(d.max_abs_diff <= tol);
        CHECK(greedy_disagreements(got, ref, spec.config.n_vocab, 2 * tol) == 0);
      }
  }
}

namespace {

// The counters of one decode step (after a 4-token prefill) of `spec` with n_layer layers.
gpu::step_stats decode_step_stats(gpu::backend& be, test_model_spec spec, int n_layer, const std::string& path) {
  spec.config.n_layer = n_layer;
  REQUIRE(write_test_gguf(spec, path).ok());
  auto r = load_runner(path, be, 32, 1);
  kv_sequence seq;
  REQUIRE(r->kv().reserve(seq, 6).ok());
  const auto toks = test_tokens(5, spec.config.n_vocab, 3);
  batch pre;
  pre.block_tables.push_back(seq.blocks);
  pre.add_tokens(0, std::span(toks).first(4), 0, true);
  REQUIRE(r->forward(pre).ok());
  batch dec;
  dec.block_tables.push_back(seq.blocks);
  dec.add_tokens(0, std::span(toks).subspan(4, 1), 4, true);
  REQUIRE(r->forward(dec).ok());
  return be.last_step_stats();
}

}  // namespace

TEST_CASE("vk decode step counters per layer under the GPU tuning", "[vk][counters]") {
  // Per layer: stacked q/k/v (attention norm in its prologue, bias fused), rope + q/k norm +
  // cache write, attention, o (+ residual), gate/up (FFN norm in its prologue, SwiGLU), down
  // (+ residual) = 6 dispatches, and a barrier before each (every one reads what the one
  // before wrote). Measured as the difference between 4 and 2 layers, so the step's fixed
  // ops (embedding, final norm, lm head) cancel out.
  auto vk = make_vk("gpu");
  temp_dir tmp;
  for (auto shape : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
    INFO(shape);
    auto spec = tiny_spec(shape, gpu::dtype::q8_0);
    const auto s2 = decode_step_stats(*vk, spec, 2, tmp / "a.gguf");
    const auto s4 = decode_step_stats(*vk, spec, 4, tmp / "b.gguf");
    const auto per_layer = [&](uint64_t gpu::step_stats::*f) { return (s4.*f - s2.*f) / 2; };
    CHECK(per_layer(&gpu::step_stats::dispatches) == 6);
    CHECK(per_layer(&gpu::step_stats::barriers) == 6);
    CHECK(s4.submits == 1);
    CHECK(s4.fence_waits == 1);
    // Greedy decode reads back at most one logit row (f32).
    CHECK(s4.bytes_downloaded <= uint64_t(spec.config.n_vocab) * 4);
    CHECK(s4.bytes_uploaded < 1024);  // the step's token, position, slot and block table
    CHECK(s4.bytes_moved > s2.bytes_moved);
  }
}

TEST_CASE("vk decode step counters per layer under the CPU tuning", "[vk][counters]") {
  // CPU devices keep add + norm as one texel kernel (no norm prologue in their matmuls):
  // q/k/v, rope + cache write, attention, o, add + norm, gate/up, down, add + norm.
  auto vk = make_vk("cpu");
  temp_dir tmp;
  auto spec = tiny_spec("tiny-qwen3", gpu::dtype::q8_0);
  const auto s2 = decode_step_stats(*vk, spec, 2, tmp / "a.gguf");
  const auto s4 = decode_step_stats(*vk, spec, 4, tmp / "b.gguf");
  CHECK((s4.dispatches - s2.dispatches) / 2 == 8);
  CHECK((s4.barriers - s2.barriers) / 2 == 8);
}

TEST_CASE("vk: a KV block one binding cannot hold is refused with one line", "[vk][limits]") {
  // A pool larger than one binding is bound in windows of whole blocks (next test); a block
  // must fit one binding (the test hook lowers device_info::max_binding_bytes to 4 KiB).
  gpu::vk_options o;
  o.max_binding_bytes = 4 << 10;
  auto be = gpu::make_vk_backend(o);
  REQUIRE(be.ok());
  auto spec = tiny_spec("tiny-llama", gpu::dtype::f32);
  const auto& c = spec.config;
  const uint64_t row = uint64_t(c.n_head_kv) * uint64_t(c.head_dim) * 4;  // f32 K row bytes
  const int fit_tokens = int((4 << 10) / row);
  REQUIRE(fit_tokens >= 1);
  CHECK(kv_cache::create(**be, c, 64, gpu::dtype::f32, fit_tokens).ok());  // 64 blocks: many bindings' worth
  auto too_big = kv_cache::create(**be, c, 4, gpu::dtype::f32, fit_tokens + 1);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.error().message.find("block size") != std::string::npos);
  CHECK(too_big.error().message.find('\n') == std::string::npos);
}

namespace {
// sequence_logits with the sequence's cache in the given blocks (position p in
// blocks[p / 16]), which need not be allocated: the runner only reads the block table.
std::vector<float> logits_in_blocks(runner& r, const std::vector<int32_t>& tokens, size_t prefill,
                                    const std::vector<int32_t>& blocks) {
  std::vector<float> out;
  for (size_t pos = 0; pos < tokens.size();) {
    const size_t n = std::min(pos == 0 ? prefill : 1, tokens.size() - pos);
    batch b;
    b.block_tables.push_back(blocks);
    b.add_tokens(0, std::span(tokens).subspan(pos, n), static_cast<int32_t>(pos), false);
    for (size_t i = 0; i < n; ++i) b.logit_rows.push_back(static_cast<int32_t>(i));
    auto l = r.forward(b);
    REQUIRE(l.ok());
    out.insert(out.end(), l->begin(), l->end());
    pos += n;
  }
  return out;
}
}  // namespace

TEST_CASE("vk: a KV pool beyond maxStorageBufferRange runs in windows of blocks, output unchanged", "[vk][limits]") {
  // maxStorageBufferRange lowered to 64 KiB: tiny-llama's 64-block pool (1024 tokens, 512 /
  // 256 / 136 KiB per layer at f32 / f16 / q8_0) is 10 / 5 / 3 windows of whole blocks. The
  // sequence's blocks lie in different windows; prefill (20 tokens: the tiled flash path)
  // then decode steps (split decode) must give the unsplit backend's logits and greedy tokens,
  // under both tunings (the CPU tuning's texel attention cannot take a split pool: flash runs).
  temp_dir tmp;
  auto spec = tiny_spec("tiny-llama", gpu::dtype::f32);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  const int V = spec.config.n_vocab;
  const auto toks = test_tokens(34, V, 5);
  const std::vector<int32_t> blocks = {63, 9, 30};
  for (auto kv_type : {gpu::dtype::f32, gpu::dtype::f16, gpu::dtype::q8_0})
    for (const std::string tuning : {"cpu", "gpu"}) {
      INFO("kv " << gpu::traits(kv_type).name << " tuning " << tuning);
      auto whole = make_vk(tuning);
      const auto want = logits_in_blocks(*load_runner(tmp / "m.gguf", *whole, 256, 4, 256, 64, kv_type), toks, 20, blocks);
      gpu::vk_options o;
      o.tuning = tuning;
      o.max_storage_range = 64 << 10;
      auto split = gpu::make_vk_backend(o);
      REQUIRE(split.ok());
      auto r = load_runner(tmp / "m.gguf", **split, 256, 4, 256, 64, kv_type);
      REQUIRE(r);
      const auto got = logits_in_blocks(*r, toks, 20, blocks);
      // The split ran: kv_store once per window and a flash pass per window (plus the merge).
      CHECK((*split)->last_step_stats().dispatches > whole->last_step_stats().dispatches + 2 * 2);
      const auto d = compare(got, want);
      CHECK(d.max_abs_diff <= 1e-3f * std::max(1.f, d.max_abs_ref));
      CHECK(greedy_disagreements(got, want, V, 1e-2f) == 0);
    }
}

TEST_CASE("vk: weights beyond maxStorageBufferRange run in binding windows, output unchanged", "[vk][limits]") {
  // The test hook lowers maxStorageBufferRange to 64 KiB: tiny-llama's embedding, FFN and
  // stacked q/k/v weights (128-512 KiB) are then dedicated buffers bound in row windows
  // (split matmuls, windowed get_rows, the fused ops composed) and planar q8_0 falls back
  // to GGUF blocks. Logits and greedy tokens must equal the unsplit backend's.
  temp_dir tmp;
  for (auto type : {gpu::dtype::f32, gpu::dtype::q8_0, gpu::dtype::q4_K}) {
    auto spec = tiny_spec("tiny-llama", type);
    REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
    const int V = spec.config.n_vocab;
    const auto toks = test_tokens(12, V, 3);
    for (const std::string tuning : {"cpu", "gpu"}) {
      INFO("type " << gpu::traits(type).name << " tuning " << tuning);
      auto whole = make_vk(tuning);
      const auto want = sequence_logits(*load_runner(tmp / "m.gguf", *whole, 32, 1), toks, 5);
      gpu::vk_options o;
      o.tuning = tuning;
      o.max_storage_range = 64 << 10;
      auto split = gpu::make_vk_backend(o);
      REQUIRE(split.ok());
      REQUIRE((*split)->info().max_binding_bytes < (64 << 10));
      const auto got = sequence_logits(*load_runner(tmp / "m.gguf", **split, 32, 1), toks, 5);
      const auto d = compare(got, want);
      CHECK(d.max_abs_diff <= 1e-3f * std::max(1.f, d.max_abs_ref));
      CHECK(greedy_disagreements(got, want, V, 1e-2f) == 0);
    }
  }
}

TEST_CASE("vk MoE: batched rows routed to different experts equal each sequence alone, both tunings", "[vk][moe]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-qwen3moe", gpu::dtype::q8_0);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  const int V = spec.config.n_vocab;
  for (const std::string tuning : {"cpu", "gpu"}) {
    INFO("tuning " << tuning);
    auto vk = make_vk(tuning);
    auto r = load_runner(tmp / "m.gguf", *vk, 64, 4);
    check_batched_equals_alone(*r, V);
  }
}

TEST_CASE("vk MoE: llama.cpp's Q4_K_M mix of a qwen3moe file matches ref under both tunings", "[vk][moe]") {
  // Mixed types in one file: q8_0 attn_k/v and q5_K attn_output (8-expert rules), q4_K
  // gate/up experts, q6_K down experts in the "more bits" layers, the f32 router.
  temp_dir tmp;
  auto spec = tiny_spec("tiny-qwen3moe", gpu::dtype::f32);
  spec.preset = "Q4_K_M";
  spec.config.n_layer = 8;
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto ref_be = gpu::make_ref_backend();
  const auto toks = test_tokens(24, spec.config.n_vocab, 4);
  const auto ref = sequence_logits(*load_runner(tmp / "m.gguf", *ref_be, 64, 1), toks, 12);
  for (const std::string tuning : {"cpu", "gpu"}) {
    auto vk = make_vk(tuning);
    const auto got = sequence_logits(*load_runner(tmp / "m.gguf", *vk, 64, 1), toks, 12);
    const auto d = compare(got, ref);
    INFO("tuning " << tuning << ": max |vk - ref| " << d.max_abs_diff);
    CHECK(d.max_abs_diff <= k_tol * std::max(1.f, d.max_abs_ref));
  }
}

TEST_CASE("vk gpt-oss: MXFP4 experts (llama.cpp's MXFP4_MOE mix) match ref, batched rows too, under both tunings",
          "[vk][moe][gpt-oss]") {
  // Experts mxfp4, attention and embeddings q8_0, router and biases f32. (Against llama.cpp
  // this mix moves by up to 0.7 in logprob at isolated positions, from llama.cpp's q8 rounding
  // of every quantized matmul's activations, not routing flips (docs/architecture.md,
  // "gpt-oss"); the f32 file and gpt-oss-mxfp4 are the llama.cpp comparisons.)
  temp_dir tmp;
  auto spec = tiny_spec("tiny-gpt-oss", gpu::dtype::f32);
  spec.preset = "MXFP4";
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto ref_be = gpu::make_ref_backend();
  const auto toks = test_tokens(24, spec.config.n_vocab, 4);
  const auto ref = sequence_logits(*load_runner(tmp / "m.gguf", *ref_be, 64, 1), toks, 12);
  for (const std::string tuning : {"cpu", "gpu"}) {
    auto vk = make_vk(tuning);
    const auto got = sequence_logits(*load_runner(tmp / "m.gguf", *vk, 64, 1), toks, 12);
    const auto d = compare(got, ref);
    INFO("tuning " << tuning << ": max |vk - ref| " << d.max_abs_diff);
    CHECK(d.max_abs_diff <= k_tol * std::max(1.f, d.max_abs_ref));
    auto r = load_runner(tmp / "m.gguf", *vk, 64, 4);
    check_batched_equals_alone(*r, spec.config.n_vocab);
  }
}

TEST_CASE("vk MoE decode step: a fixed dispatch count per layer, one submit", "[vk][moe][counters]") {
  // Per MoE layer: q/k/v, rope + cache write, attention, o, add + norm, then router matmul,
  // moe_route (top-k on the device), gate/up SwiGLU over the chosen experts, down, weighted
  // combine, add + norm = 11 dispatches, whatever experts the tokens pick.
  temp_dir tmp;
  for (const std::string tuning : {"cpu", "gpu"}) {
    INFO("tuning " << tuning);
    auto vk = make_vk(tuning);
    auto spec = tiny_spec("tiny-qwen3moe", gpu::dtype::q8_0);
    const auto s2 = decode_step_stats(*vk, spec, 2, tmp / "a.gguf");
    const auto s4 = decode_step_stats(*vk, spec, 4, tmp / "b.gguf");
    CHECK((s4.dispatches - s2.dispatches) / 2 == 11);
    CHECK((s4.barriers - s2.barriers) / 2 <= 11);
    CHECK(s4.submits == 1);
    CHECK(s4.fence_waits == 1);
  }
}

TEST_CASE("vk q8_1 activations (#20): a generated Q4_K_M llama matches gpu/ref's q8_1 twin, greedy tokens too",
          "[vk][q8_1]") {
  // llama.cpp's Q4_K_M rules (q4_K, q6_K, q5_0 ... tensors), 8 tokens prefilled then decoded
  // one per step (T <= 8: the q8_1 matvec), under the integer-dot builds (gpu:4:q8 shared-
  // memory reduction, gpu:32:q8 subgroupAdd) and the unpacked-int ones (gpu:64:q8i).
  // Tolerance 3x the f32 one: an activation one ulp away from ref's (another summation order
  // upstream) can round to the neighbouring q8_1 quant; the subgroupAdd builds agree with the
  // twin to 5e-7 on this model, the shared-memory trees move one quant (0.05 of logits of
  // magnitude 3), while q8_1 against f32 activations is 0.09 here.
  temp_dir tmp;
  auto spec = tiny_spec("tiny-llama", gpu::dtype::f32);
  spec.preset = "Q4_K_M";
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto ref_be = gpu::make_ref_backend_q8_1();
  const auto toks = test_tokens(24, spec.config.n_vocab, 6);
  const auto ref = sequence_logits(*load_runner(tmp / "m.gguf", *ref_be, 64, 1), toks, 8);
  for (const std::string tuning : {"gpu:4:q8", "gpu:32:q8", "gpu:64:q8i"}) {
    auto vk = make_vk(tuning);
    const auto got = sequence_logits(*load_runner(tmp / "m.gguf", *vk, 64, 1), toks, 8);
    const auto d = compare(got, ref);
    const float tol = 3 * k_tol * std::max(1.f, d.max_abs_ref);
    INFO("tuning " << tuning << ": max |vk - ref| " << d.max_abs_diff);
    CHECK(d.max_abs_diff <= tol);
    CHECK(greedy_disagreements(got, ref, spec.config.n_vocab, 2 * tol) == 0);
  }
}

TEST_CASE("vk gpt-oss decode step: expert biases and the clamped SwiGLU in the expert matmuls' epilogue",
          "[vk][moe][gpt-oss][counters]") {
  // Per gpt-oss layer after attention's add + norm: router matmul with its bias in the epilogue,
  // moe_route, gate/up matvec_id with the per-expert biases and the clamped SwiGLU in its
  // output stage, down matvec_id with its per-expert bias, combine, add + norm = 6 (the
  // unfused router + bias add, matmul_id, add_id, swiglu_oai, matmul_id, add_id: 10).
  temp_dir tmp;
  for (const std::string tuning : {"cpu", "gpu"}) {
    INFO("tuning " << tuning);
    auto vk = make_vk(tuning);
    auto spec = tiny_spec("tiny-gpt-oss", gpu::dtype::q8_0);
    spec.expert_type = gpu::dtype::mxfp4;
    const auto s2 = decode_step_stats(*vk, spec, 2, tmp / "a.gguf");
    const auto s4 = decode_step_stats(*vk, spec, 4, tmp / "b.gguf");
    // Attention's part: q/k/v, rope q, rope k and the cache write (YaRN ropes do not take the
    // fused rope_kv_store), attention (the GPU tunings' flash decode adds its merge only when
    // it splits the keys, not at 5 tokens), o (+ bias), add + norm: 7. 7 + 10 = 17 before.
    CHECK((s4.dispatches - s2.dispatches) / 2 == 7 + 6);
    CHECK(s4.submits == 1);
  }
}

namespace {
// Greedy decode of three sequences (an argmax row, a full row, a top-k row), the third
// ending after 10 steps, blocks reserved step by step as the engine does; returns every
// token and, per decode step, the backend's overlapped counter.
struct overlap_run {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<uint64_t> overlapped;
};
overlap_run decode_three(const std::string& path, gpu::backend& be, int overlap_record) {
  auto f = model_file::open(path);
  REQUIRE(f.ok());
  runner_options o;
  o.max_context = 64;
  o.kv_blocks = 16;
  o.overlap_record = overlap_record;
  auto r = runner::load(*f, be, o);
  REQUIRE(r.ok());
  const int V = (*r)->config().n_vocab;
  const std::vector<logit_need> kinds = {{logit_kind::argmax, 0}, {logit_kind::full, 0}, {logit_kind::top_k, 8}};
  std::vector<kv_sequence> seqs(3);
  overlap_run out;
  out.tokens = {test_tokens(5, V, 1), test_tokens(9, V, 2), test_tokens(3, V, 3)};
  std::vector<int32_t> pos(3, 0);
  for (int step = 0; step < 24; ++step) {
    batch b;
    std::vector<int> live;
    for (int s = 0; s < 3; ++s)
      if (s < 2 || step < 10) live.push_back(s);
    for (int s : live) REQUIRE((*r)->kv().reserve(seqs[size_t(s)], int(out.tokens[size_t(s)].size())).ok());
    for (size_t j = 0; j < live.size(); ++j) {
      const auto& t = out.tokens[size_t(live[j])];
      b.block_tables.push_back(seqs[size_t(live[j])].blocks);
      b.add_tokens(int32_t(j), std::span(t).subspan(size_t(pos[size_t(live[j])])), pos[size_t(live[j])], true);
      b.needs.push_back(kinds[size_t(live[j])]);
    }
    auto res = (*r)->forward_step(b);
    REQUIRE(res.ok());
    if (step > 0) out.overlapped.push_back(be.last_step_stats().overlapped);
    for (size_t j = 0; j < live.size(); ++j) {
      const int s = live[j];
      pos[size_t(s)] = int32_t(out.tokens[size_t(s)].size());
      const int32_t next = s == 0 ? res->token(j) : s == 1 ? argmax(res->row(j)) : res->cand_indices(j)[0];
      out.tokens[size_t(s)].push_back(next);
    }
  }
  for (auto& s : seqs) (*r)->kv().release(s);
  return out;
}
}  // namespace

TEST_CASE("vk: overlapped recording (step N+1 recorded while step N runs) keeps the tokens", "[vk][overlap]") {
  // With overlap on, a decode step whose shape equals the one recorded aside during the
  // step before is submitted from that recording (its inputs replaced): the tokens must be
  // those of plain recording. Steps after a block boundary or a sequence leaving are
  // recorded afresh (overlapped == 0), the others are resumed (overlapped == 1).
  temp_dir tmp;
  auto spec = tiny_spec("tiny-llama", gpu::dtype::q8_0);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  for (const std::string tuning : {"cpu", "gpu"}) {
    INFO("tuning " << tuning);
    auto be = make_vk(tuning);
    const auto plain = decode_three(tmp / "m.gguf", *be, 0);
    const auto over = decode_three(tmp / "m.gguf", *be, 1);
    CHECK(over.tokens == plain.tokens);
    uint64_t n_plain = 0, n_over = 0;
    for (auto v : plain.overlapped) n_plain += v;
    for (auto v : over.overlapped) n_over += v;
    CHECK(n_plain == 0);
    // 23 decode steps: the first, step 10 (the third sequence left) and steps 8 and 12 (the
    // second and first sequence open their second block) are recorded afresh; the other 19
    // are resumed.
    CHECK(n_over == 19);
    CHECK(over.overlapped[9] == 0);  // decode step 10: two sequences instead of three
  }
}
