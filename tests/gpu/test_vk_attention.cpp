// Flash attention (attention_flash.comp + attention_merge.comp, GPU tunings) against gpu/ref
// at the edges of its tiles and splits: contexts 1, 15-17, 255-257 (16-key tiles, 64-key
// split parts), decode batches (T <= 8: one token per workgroup, context split) and prefill
// chunks of T = 2..9 and 17 after histories that straddle tiles (16-row query tiles), GQA groups
// 1/2/4/8, f32/f16/q8_0 caches, sliding window and softcap. Under CPU tunings the same cases
// check the serial/texel kernels. Each case is one small step (seconds on lavapipe).
#include <cstdlib>
#include <string_view>

#include "vk_fixture.hpp"

using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {

struct attn_case {
  int H, Hkv, D;
  dtype cache;
};

// A pool of S sequences with their histories stored; then steps of (seq, pos) query tokens.
struct attn_pool {
  static constexpr int B = 16;
  int maxb = 1;  // columns of the block table: the longest history's blocks
  attn_case c;
  pair_fixture& f;
  std::vector<int32_t> bt;
  twin kc, vc, tbt;
  int n_blocks;

  attn_pool(pair_fixture& fx, attn_case cs, const std::vector<int>& hist) : c(cs), f(fx) {
    const int S = int(hist.size()), W = c.Hkv * c.D;
    for (int h : hist) maxb = std::max(maxb, (h + B - 1) / B);
    bt.assign(size_t(S * maxb), 0);
    int used = 0;
    for (int s = 0; s < S; ++s)
      for (int i = 0; i < (hist[size_t(s)] + B - 1) / B; ++i) bt[size_t(s * maxb + i)] = used++;
    n_blocks = used;
    for (int i = 0; i < used; ++i) std::swap(bt[size_t(i)], bt[size_t((i * 7) % used)]);  // scattered blocks
    std::vector<int32_t> slots;
    for (int s = 0; s < S; ++s)
      for (int p = 0; p < hist[size_t(s)]; ++p) slots.push_back(slot(s, p));
    const auto zero = encode(c.cache, std::vector<float>(size_t(W) * n_blocks * B, 0.f), W);
    kc = f.cache2(c.cache, {W, n_blocks * B, 1, 1}, zero);
    vc = f.cache2(c.cache, {W, n_blocks * B, 1, 1}, zero);
    tbt = f.i32({maxb, S, 1, 1}, bt);
    const int64_t Th = int64_t(slots.size());
    auto hk = f.f32({W, Th, 1, 1}, randn(size_t(W * Th), 51)), hv = f.f32({W, Th, 1, 1}, randn(size_t(W * Th), 52));
    auto ts = f.i32({Th, 1, 1, 1}, slots);
    f.run([&](backend& b, bool is_vk) { b.kv_store(PICK(kc), PICK(vc), PICK(hk), PICK(hv), PICK(ts)); });
  }
  int32_t slot(int s, int p) const { return bt[size_t(s * maxb + p / B)] * B + p % B; }

  // Attention of the query tokens (seq[i], pos[i]) (keys already stored), ref vs vk.
  double check(const std::vector<int32_t>& seq, const std::vector<int32_t>& pos, int window, float softcap,
               bool sinks = false) {
    const int64_t T = int64_t(seq.size());
    auto q = f.f32({int64_t(c.H) * c.D, T, 1, 1}, randn(size_t(c.H * c.D * T), uint32_t(53 + T)));
    auto tseq = f.i32({T, 1, 1, 1}, seq), tpos = f.i32({T, 1, 1, 1}, pos);
    auto out = f.make2(dtype::f32, {int64_t(c.H) * c.D, T, 1, 1});
    attention_params ap{c.H, c.Hkv, c.D, B, maxb, 1.f / std::sqrt(float(c.D))};
    ap.window = window;
    ap.softcap = softcap;
    // Sinks (gpt-oss): logits around the scores' range, so they matter.
    auto sk = f.f32({c.H, 1, 1, 1}, randn(size_t(c.H), 57, 2.f));
    f.run([&](backend& b, bool is_vk) {
      if (sinks) ap.sinks = PICK(sk);
      b.attention(PICK(out), PICK(q), PICK(kc), PICK(vc), PICK(tbt), PICK(tseq), PICK(tpos), ap);
    });
    return f.err(out);
  }
};

double tol(dtype t) { return t == dtype::f32 ? 1e-5 : 2e-3; }

}  // namespace

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
