// Flash attention (attention_flash.comp + attention_merge.comp, GPU tunings) against gpu/ref
// at the edges of its tiles and splits: contexts 1, 15-17, 255-257 (16-key tiles, 64-key
// split parts), decode batches (T <= 8: one token per workgroup, context split) and prefill
// chunks of T = 2..9 and 17 after histories that straddle tiles (16-row query tiles), GQA groups
// 1/2/4/8, f32/f16/q8_0 caches, sliding window and softcap. Under CPU tunings the same cases
// check the serial/texel kernels. Each case is one small step (seconds on lavapipe).
#include <cstdlib>
#include <string_view>

#include "attn_pool.hpp"

using namespace vks::gpu;
using namespace vks::gpu::test;

TEST_CASE("vk flash attention: decode batches at context edges, every GQA group and cache type",
          "[vk][attention][flash]") {
  pair_fixture f;
  // Contexts 1, 15-17, 255-257 (seven sequences decoding together: T = 7).
  const std::vector<int> ctx{1, 15, 16, 17, 255, 256, 257};
  for (attn_case c : {attn_case{4, 4, 64, dtype::f32}, attn_case{8, 4, 128, dtype::f16}, attn_case{8, 2, 32, dtype::f16},
                      attn_case{8, 1, 64, dtype::q8_0}}) {
    INFO("H " << c.H << " Hkv " << c.Hkv << " D " << c.D << " cache " << traits(c.cache).name);
    attn_pool pool(f, c, ctx);
    std::vector<int32_t> seq, pos;
    for (int s = 0; s < int(ctx.size()); ++s) seq.push_back(s), pos.push_back(ctx[size_t(s)] - 1);
    for (auto [window, softcap] : {std::pair{0, 0.f}, std::pair{20, 1.5f}}) {
      INFO("window " << window << " softcap " << softcap);
      CHECK(pool.check(seq, pos, window, softcap) < tol(c.cache));
    }
    // One token alone (T = 1), the longest context; and T = 8 (two tokens of one sequence).
    CHECK(pool.check({6}, {256}, 0, 0.f) < tol(c.cache));
    seq.push_back(6), pos.push_back(255);
    CHECK(pool.check(seq, pos, 0, 0.f) < tol(c.cache));
  }
}

TEST_CASE("vk flash attention: prefill chunks across query tiles and key tiles", "[vk][attention][flash]") {
  pair_fixture f;
  for (attn_case c : {attn_case{4, 2, 64, dtype::f32}, attn_case{8, 1, 32, dtype::f16}, attn_case{4, 4, 32, dtype::q8_0}}) {
    INFO("H " << c.H << " Hkv " << c.Hkv << " D " << c.D << " cache " << traits(c.cache).name);
    // Sequence 0: 48 keys, sequence 1: 272; a chunk is the last T positions of one of them
    // (their keys stored already, as after rope_kv_store), alone or after a decode token of
    // the other sequence (a query tile holding two sequences).
    attn_pool pool(f, c, {48, 272});
    for (int T : {2, 5, 9, 17}) {
      for (int s : {0, 1}) {
        const int end = s == 0 ? 48 : 272;
        std::vector<int32_t> seq, pos;
        if (T != 5) seq.push_back(1 - s), pos.push_back((s == 0 ? 272 : 48) - 1);
        for (int p = end - T; p < end; ++p) seq.push_back(s), pos.push_back(p);
        INFO("T " << T << " seq " << s << " tokens " << seq.size());
        CHECK(pool.check(seq, pos, 0, 0.f) < tol(c.cache));
        if (T == 17) CHECK(pool.check(seq, pos, 7, 2.f) < tol(c.cache));
      }
    }
  }
}

TEST_CASE("vk flash attention: a 4096-key context", "[vk][attention][flash]") {
  pair_fixture f;
  const attn_case c{4, 2, 64, dtype::f16};
  attn_pool pool(f, c, {4096});
  CHECK(pool.check({0}, {4095}, 0, 0.f) < tol(c.cache));
}

// Sinks in the flash kernels (direct output and the merge) and, under the CPU tunings, in
// attention.comp, attention_serial.comp and attention_texel.comp.
TEST_CASE("vk flash attention: attention sinks, split and unsplit", "[vk][attention][flash]") {
  pair_fixture f;
  for (attn_case c : {attn_case{8, 2, 64, dtype::f16}, attn_case{4, 4, 32, dtype::q8_0}}) {
    INFO("H " << c.H << " Hkv " << c.Hkv << " D " << c.D << " cache " << traits(c.cache).name);
    attn_pool pool(f, c, {17, 257});
    CHECK(pool.check({0, 1}, {16, 256}, 0, 0.f, true) < tol(c.cache));   // decode, split
    CHECK(pool.check({0, 1}, {0, 3}, 0, 0.f, true) < tol(c.cache));      // short contexts
    std::vector<int32_t> seq, pos;
    for (int p = 240; p < 257; ++p) seq.push_back(1), pos.push_back(p);
    CHECK(pool.check(seq, pos, 30, 1.5f, true) < tol(c.cache));           // a prefill tile
  }
}
