// Head dims 256 and 512 (Gemma 4: sliding layers 256, global layers 512) through the attention
// path against gpu/ref under whichever tuning the binary runs (meson runs it under cpu,
// cpu:loads, cpu:ssbo, gpu, gpu:64, and [headdim] alone under gpu:4 and gpu:32): rope_kv_store
// (q/k norms, rope, cache write), kv_store, attention in decode (split context, merged) and
// prefill (query tiles, two sequences in a tile), f32/f16/q8_0 caches, windows, softcap, sinks;
// and a KV pool bound in windows (flash attention one pass per window, on every tuning).
// Small H, T and contexts: seconds on lavapipe.
#include <cstdlib>
#include <string_view>

#include "attn_pool.hpp"

using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {

// Decode (one token per sequence: split context), prefill (the last 9 positions of sequence
// 1 after a decode token of sequence 0: T = 10, query tiles holding both sequences), with a
// window and softcap, and sinks. hist: {9, 130} (key tiles of 8 and 16 straddled).
void check_pool(pair_fixture& f, attn_case c) {
  INFO("H " << c.H << " Hkv " << c.Hkv << " D " << c.D << " cache " << traits(c.cache).name);
  attn_pool pool(f, c, {9, 130});
  CHECK(pool.check({0, 1}, {8, 129}, 0, 0.f) < tol(c.cache));
  CHECK(pool.check({1}, {129}, 40, 1.5f) < tol(c.cache));
  CHECK(pool.check({0, 1}, {3, 100}, 0, 0.f, true) < tol(c.cache));
  std::vector<int32_t> seq{0}, pos{8};
  for (int p = 121; p < 130; ++p) seq.push_back(1), pos.push_back(p);
  CHECK(pool.check(seq, pos, 0, 0.f) < tol(c.cache));
  CHECK(pool.check(seq, pos, 20, 2.f, true) < tol(c.cache));
}

}  // namespace

TEST_CASE("vk attention at head dims 256 and 512: decode and prefill, every cache type",
          "[vk][attention][headdim][flash]") {
  pair_fixture f;
  // GQA groups 2 and 1 at D = 512 (flash: 2 query rows per workgroup as 2 heads or 2 tokens),
  // 4 and 2 at D = 256 (4 rows).
  for (attn_case c : {attn_case{4, 2, 512, dtype::f32}, attn_case{2, 2, 512, dtype::f16}, attn_case{4, 2, 512, dtype::q8_0},
                      attn_case{4, 1, 256, dtype::f16}, attn_case{2, 1, 256, dtype::q8_0}, attn_case{2, 1, 256, dtype::f32}})
    check_pool(f, c);
}

TEST_CASE("vk rope_kv_store at head dims 256 and 512 matches the composition", "[vk][rope][headdim]") {
  pair_fixture f;
  twin none;
  none.r.ne = none.v.ne = {0, 1, 1, 1};
  const int64_t T = 3;
  const std::vector<int32_t> pos{0, 9, 1023}, slots{5, 0, 30};
  for (dtype ct : {dtype::f32, dtype::f16, dtype::q8_0})
    for (int64_t D : {256, 512})
      for (auto mode : {rope_mode::normal, rope_mode::neox})
        for (bool partial : {false, true})  // partial: a quarter of the dims rotated, with freq factors
          for (bool norm : {false, true}) {
            INFO("cache " << traits(ct).name << " D " << D << " mode " << int(mode) << " partial " << partial << " norm "
                          << norm);
            const int64_t H = 2, Hkv = 1, W = Hkv * D, n_dims = partial ? D / 4 : D;
            auto q = f.f32({H * D, T, 1, 1}, randn(size_t(H * D * T), uint32_t(D + 1), 2.f));
            auto k = f.f32({W, T, 1, 1}, randn(size_t(W * T), uint32_t(D + 2), 2.f));
            auto v = f.f32({W, T, 1, 1}, randn(size_t(W * T), uint32_t(D + 3)));
            auto kc = f.cache2(ct, {W, 32, 1, 1}, encode(ct, std::vector<float>(size_t(W * 32), 0.5f), W));
            auto vc = f.cache2(ct, {W, 32, 1, 1}, encode(ct, std::vector<float>(size_t(W * 32), 0.5f), W));
            auto tp = f.i32({T, 1, 1, 1}, pos), ts = f.i32({T, 1, 1, 1}, slots);
            std::vector<float> ffv(size_t(n_dims / 2));
            for (size_t i = 0; i < ffv.size(); ++i) ffv[i] = 1.f + 0.25f * float(i % 5);
            auto ff = f.f32({n_dims / 2, 1, 1, 1}, ffv);
            auto qn = f.f32({D, 1, 1, 1}, randn(size_t(D), 8)), kn = f.f32({D, 1, 1, 1}, randn(size_t(D), 9));
            const rope_params p{mode, int(n_dims), 1000000.f, 1.f};
            f.run([&](backend& b, bool is_vk) {
              b.rope_kv_store(PICK(q), PICK(k), PICK(v), PICK(kc), PICK(vc), PICK(tp), PICK(ts), int(D), p,
                              partial ? PICK(ff) : PICK(none), norm ? PICK(qn) : PICK(none), norm ? PICK(kn) : PICK(none),
                              1e-6f);
            });
            // As the D <= 128 test in test_vk_kernels.cpp: q8_0 values within float error of a
            // rounding midpoint may quantize one step apart.
            const double tol = ct == dtype::q8_0 ? 1.0 / 127 + 1e-3 : ct == dtype::f16 ? 2e-3 : 2e-4;
            CHECK(f.err(q) < 2e-4);
            CHECK(rel_err(read_cache(f.vk, kc.v), read_cache(*f.ref, kc.r)) < tol);
            CHECK(rel_err(read_cache(f.vk, vc.v), read_cache(*f.ref, vc.r)) < tol);
          }
}

// A 64 KiB storage range: the pools below (96 KiB to 384 KiB) are bound in windows of 1 (f32,
// D = 512: 32 KiB blocks) to 7 blocks, and attention runs attention_flash.comp one pass per
// window, on this tuning too (CPU tunings included), merged by attention_merge.comp.
TEST_CASE("vk attention at head dims 256 and 512 over a KV pool beyond maxStorageBufferRange",
          "[vk][attention][headdim]") {
  vk_options o;
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;
  o.max_storage_range = 64 << 10;
  auto be = make_vk_backend(o);
  REQUIRE(be.ok());
  pair_fixture f{make_ref_backend(), **be};
  for (attn_case c : {attn_case{2, 1, 512, dtype::f32}, attn_case{2, 1, 512, dtype::f16}, attn_case{2, 1, 512, dtype::q8_0},
                      attn_case{2, 1, 256, dtype::f16}})
    check_pool(f, c);
}

// Vulkan's minimum of 16 KiB of shared memory (flash_shape.hpp): flash attention's tiles shrink
// (D = 512: 1 row, 4-key tiles; D = 256: 4 rows, 4 keys), the D = 512 pool in binding windows
// too. A GPU tuning (the flash kernel's family) under every run.
TEST_CASE("vk flash attention with 16 KiB of shared memory: smaller tiles", "[vk][attention][headdim]") {
  vk_options o;
  const char* t = std::getenv("VKS_VK_TUNING");
  o.tuning = t && std::string_view(t).substr(0, 3) == "gpu" ? t : "gpu";
  o.max_shared_memory = 16 << 10;
  o.max_storage_range = 64 << 10;
  auto be = make_vk_backend(o);
  REQUIRE(be.ok());
  pair_fixture f{make_ref_backend(), **be};
  for (attn_case c : {attn_case{2, 1, 512, dtype::f16}, attn_case{4, 1, 256, dtype::q8_0}})
    check_pool(f, c);
}

// Above 512 (no kernel's limit is reached first on every tuning): the step fails with one line,
// and the backend serves the next step.
TEST_CASE("vk attention refuses head dims above 512 with an error", "[vk][attention][headdim]") {
  pair_fixture f;
  const int D = 576;
  auto q = f.f32({D, 1, 1, 1}, randn(size_t(D), 1));
  auto kc = f.make2(dtype::f32, {D, 16, 1, 1}), out = f.make2(dtype::f32, {D, 1, 1, 1});
  auto zero = f.i32({1, 1, 1, 1}, {0});
  const attention_params ap{1, 1, D, 16, 1, 0.1f};
  f.vk.begin_step();
  f.vk.attention(out.v, q.v, kc.v, kc.v, zero.v, zero.v, zero.v, ap);
  auto r = f.vk.submit();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("head_dim 576") != std::string::npos);
  CHECK(r.error().message.find('\n') == std::string::npos);
  attn_pool pool(f, attn_case{2, 1, 512, dtype::f16}, {9});
  CHECK(pool.check({0}, {8}, 0, 0.f) < tol(dtype::f16));
}
