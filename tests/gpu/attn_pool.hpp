// attn_pool: a paged KV pool of several sequences with their histories stored (scattered
// blocks of 16 rows), and steps of query tokens checked as vk against gpu/ref; shared by the
// attention tests (test_vk_attention.cpp, test_vk_headdim.cpp); read_cache: a KV cache as f32.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/quant.hpp"
#include "vk_fixture.hpp"

namespace vks::gpu::test {

// A KV cache tensor's contents as f32 (f16 and q8_0 caches converted).
inline std::vector<float> read_cache(backend& b, const tensor& t) {
  if (t.type == dtype::f32) return read_f32(b, t);
  if (t.type == dtype::q8_0) {
    std::vector<std::byte> raw(t.nbytes());
    REQUIRE(b.download(t, raw).ok());
    std::vector<float> v(size_t(t.n_elements()));
    dequantize_row(dtype::q8_0, raw.data(), v.data(), t.n_elements());
    return v;
  }
  std::vector<uint16_t> h(size_t(t.n_elements()));
  REQUIRE(b.download(t, std::as_writable_bytes(std::span<uint16_t>(h))).ok());
  std::vector<float> v(h.size());
  for (size_t i = 0; i < h.size(); ++i) v[i] = f16_to_f32(h[i]);
  return v;
}

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
    std::vector<size_t> at;  // the table entries in use
    for (int s = 0; s < S; ++s)
      for (int i = 0; i < (hist[size_t(s)] + B - 1) / B; ++i) at.push_back(size_t(s * maxb + i)), bt[at.back()] = used++;
    n_blocks = used;
    // Scattered blocks: a permutation of the blocks among the entries in use (no two share one).
    for (int i = 0; i < used; ++i) std::swap(bt[at[size_t(i)]], bt[at[size_t((i * 7) % used)]]);
    std::vector<int32_t> slots;
    for (int s = 0; s < S; ++s)
      for (int p = 0; p < hist[size_t(s)]; ++p) slots.push_back(slot(s, p));
    const auto zero = encode(c.cache, std::vector<float>(size_t(W) * n_blocks * B, 0.f), W);
    kc = f.cache2(c.cache, {W, n_blocks * B, 1, 1}, zero);
    vc = f.cache2(c.cache, {W, n_blocks * B, 1, 1}, zero);
    tbt = f.i32({maxb, S, 1, 1}, bt);
    // Stored 16 tokens per step (a step's k/v stay within a small storage range).
    const int64_t Th = int64_t(slots.size());
    const std::vector<float> rk = randn(size_t(W * Th), 51), rv = randn(size_t(W * Th), 52);
    for (int64_t t0 = 0; t0 < Th; t0 += 16) {
      const int64_t n = std::min<int64_t>(16, Th - t0);
      const auto rows = [&](const std::vector<float>& x) {
        return std::vector<float>(x.begin() + t0 * W, x.begin() + (t0 + n) * W);
      };
      auto hk = f.f32({W, n, 1, 1}, rows(rk)), hv = f.f32({W, n, 1, 1}, rows(rv));
      auto ts = f.i32({n, 1, 1, 1}, std::vector<int32_t>(slots.begin() + t0, slots.begin() + t0 + n));
      f.run([&](backend& b, bool is_vk) { b.kv_store(PICK(kc), PICK(vc), PICK(hk), PICK(hv), PICK(ts)); });
    }
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

inline double tol(dtype t) { return t == dtype::f32 ? 1e-5 : 2e-3; }

}  // namespace vks::gpu::test
