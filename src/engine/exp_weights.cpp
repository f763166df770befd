// exp(x) = 2^n * exp(r): n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (ln 2 split
// in two parts, Cody-Waite, so r keeps full precision), exp(r) by its Taylor polynomial to
// degree 7 (truncation < 1e-8 relative on that range), 2^n built in the exponent bits. For
// x in [-87, 0], n is in [-126, 0]: 2^n is a normal float. The vector path uses GCC/Clang
// vector extensions of 4 floats (an SSE2 register on x86-64, NEON on arm64), so it does not
// depend on the compiler auto-vectorizing the loop.
#include "engine/exp_weights.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace vks::engine {
namespace {

typedef float v4f __attribute__((vector_size(16)));
typedef std::int32_t v4i __attribute__((vector_size(16)));

constexpr float k_log2e = 1.44269504088896341f;
constexpr float k_ln2_hi = 0.693145751953125f;  // ln 2 = hi + lo; hi has its 12 low bits zero
constexpr float k_ln2_lo = 1.42860682030941723212e-6f;
constexpr float k_round = 12582912.f;           // 1.5 * 2^23: (y + k_round) - k_round rounds y
constexpr float k_min_x = -87.f;                // exp(-87) ~ 1.6e-38, still a normal float

// exp(r) for |r| <= ln2/2, and the rounding step; F is float or v4f.
template <class F>
F exp_reduced(F r) {
  F p = r * (1.f / 5040.f) + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  return p * r + 1.f;
}
template <class F>
F round_log2(F x) { return (x * k_log2e + k_round) - k_round; }
template <class F>
F reduce(F x, F n) { return (x - n * k_ln2_hi) - n * k_ln2_lo; }

// x in [-87, 0].
v4f exp4(v4f x) {
  const v4f n = round_log2(x);
  const v4i e = (__builtin_convertvector(n, v4i) + 127) << 23;
  v4f two_n;
  std::memcpy(&two_n, &e, sizeof two_n);
  return exp_reduced(reduce(x, n)) * two_n;
}

}  // namespace

float exp_nonpositive(float x) {
  if (!(x >= k_min_x)) return 0.f;  // also NaN
  const float n = round_log2(x);
  const std::int32_t e = (static_cast<std::int32_t>(n) + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &e, sizeof two_n);
  return exp_reduced(reduce(x, n)) * two_n;
}

double exp_weights(std::span<const float> logits, float l_max, float inv_t, float min_w, std::span<float> w) {
  const std::size_t n = logits.size(), n4 = n / 4 * 4;
  const v4f zero = {0.f, 0.f, 0.f, 0.f};
  v4f part = zero;  // float partial sums, added into `total` every 4,096 entries
  double total = 0.0;
  for (std::size_t i = 0; i < n4; i += 4) {
    v4f l;
    std::memcpy(&l, logits.data() + i, sizeof l);
    v4f x = (l - l_max) * inv_t;
    const v4i ok = x >= k_min_x;  // false for NaN and for what would underflow
    v4f q = exp4(ok ? x : zero);
    q = (ok & (q >= min_w)) ? q : zero;
    std::memcpy(w.data() + i, &q, sizeof q);
    part += q;
    if ((i & 4095) == 4092) {
      total += static_cast<double>(part[0]) + part[1] + part[2] + part[3];
      part = zero;
    }
  }
  total += static_cast<double>(part[0]) + part[1] + part[2] + part[3];
  for (std::size_t i = n4; i < n; ++i) {
    float q = exp_nonpositive((logits[i] - l_max) * inv_t);
    if (q < min_w) q = 0.f;
    w[i] = q;
    total += q;
  }
  return total;
}

}  // namespace vks::engine
