// The q8_1 activation reference (see ref_q8_1.hpp): quantization and the per-type integer
// decode of 32-element weight sub-blocks, written from ggml's block layouts.
#include "gpu/ref/ref_q8_1.hpp"

#include <cmath>
#include <cstring>

#include "base/assert.hpp"
#include "gpu/quant.hpp"

namespace vks::gpu {
namespace {

float half_at(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}
uint8_t u8(const std::byte* p, int64_t i) { return static_cast<uint8_t>(p[i]); }

// One 32-element sub-block of integer weights: w[l] = a[l / 16] * q[l] + m.
struct sub_block {
  int q[32];
  float a[2];
  float m = 0;
};

// ggml's get_scale_min_k4: 6-bit scale and min j (0..7) of a q4_K / q5_K block's 12 bytes.
void scale_min_k4(const std::byte* s, int j, int& sc, int& mn) {
  if (j < 4) {
    sc = u8(s, j) & 63;
    mn = u8(s, j + 4) & 63;
  } else {
    sc = (u8(s, j + 4) & 0xF) | ((u8(s, j - 4) >> 6) << 4);
    mn = (u8(s, j + 4) >> 4) | ((u8(s, j) >> 6) << 4);
  }
}

// The 32-element legacy blocks (q4_0, q4_1, q5_0, q5_1, q8_0): block b of the row.
sub_block legacy_block(dtype t, const std::byte* b) {
  sub_block s;
  const float d = half_at(b);
  s.a[0] = s.a[1] = d;
  if (t == dtype::q8_0) {
    for (int l = 0; l < 32; ++l) s.q[l] = static_cast<int8_t>(u8(b, 2 + l));
    return s;
  }
  const bool has_m = t == dtype::q4_1 || t == dtype::q5_1, five = t == dtype::q5_0 || t == dtype::q5_1;
  const int64_t qh_at = has_m ? 4 : 2, qs_at = qh_at + (five ? 4 : 0);
  uint32_t qh = 0;
  if (five) std::memcpy(&qh, b + qh_at, 4);
  for (int l = 0; l < 16; ++l) {
    s.q[l] = (u8(b, qs_at + l) & 0xF) | (five ? static_cast<int>((qh >> l) & 1u) << 4 : 0);
    s.q[l + 16] = (u8(b, qs_at + l) >> 4) | (five ? static_cast<int>((qh >> (l + 16)) & 1u) << 4 : 0);
  }
  s.m = has_m ? half_at(b + 2) : -(five ? 16.f : 8.f) * d;
  return s;
}

// Sub-block i (0..7) of a 256-element K-quant super-block at b.
sub_block k_sub_block(dtype t, const std::byte* b, int i) {
  sub_block s;
  if (t == dtype::q6_K) {  // ql[128], qh[64], int8 scales[16], f16 d
    const int n = i / 4, k = i % 4;
    const float d = half_at(b + 208);
    for (int l = 0; l < 32; ++l) {
      const int lo = (u8(b, 64 * n + 32 * (k & 1) + l) >> (4 * (k >> 1))) & 0xF;
      const int hi = (u8(b, 128 + 32 * n + l) >> (2 * k)) & 3;
      s.q[l] = (lo | hi << 4) - 32;
    }
    for (int g = 0; g < 2; ++g) s.a[g] = d * static_cast<float>(static_cast<int8_t>(u8(b, 192 + 8 * n + 2 * k + g)));
    return s;
  }
  // q4_K: d, dmin, scales[12], qs[128]; q5_K: d, dmin, scales[12], qh[32], qs[128].
  const bool five = t == dtype::q5_K;
  int sc, mn;
  scale_min_k4(b + 4, i, sc, mn);
  const int64_t qs_at = five ? 48 : 16;
  for (int l = 0; l < 32; ++l) {
    s.q[l] = (u8(b, qs_at + 32 * (i / 2) + l) >> (4 * (i & 1))) & 0xF;
    if (five) s.q[l] |= ((u8(b, 16 + l) >> i) & 1) << 4;
  }
  s.a[0] = s.a[1] = half_at(b) * static_cast<float>(sc);
  s.m = -half_at(b + 2) * static_cast<float>(mn);
  return s;
}

}  // namespace

bool has_q8_1_dot(dtype t) {
  switch (t) {
    case dtype::q4_0: case dtype::q4_1: case dtype::q5_0: case dtype::q5_1: case dtype::q8_0:
    case dtype::q4_K: case dtype::q5_K: case dtype::q6_K: return true;
    default: return false;
  }
}

void quantize_row_q8_1(const float* x, std::byte* dst, int64_t n) {
  VKS_ASSERT(n % 32 == 0, "quantize_row_q8_1: n not a multiple of 32");
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x + 32 * b;
    float amax = 0;
    for (int l = 0; l < 32; ++l) amax = std::max(amax, std::fabs(xb[l]));
    const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
    std::byte* o = dst + k_q8_1_block_bytes * b;
    int sum = 0;
    for (int l = 0; l < 32; ++l) {
      const int q = static_cast<int>(std::lround(xb[l] * id));
      sum += q;
      o[4 + l] = static_cast<std::byte>(static_cast<int8_t>(q));
    }
    const uint16_t hd = f32_to_f16(d), hs = f32_to_f16(d * static_cast<float>(sum));
    std::memcpy(o, &hd, 2);
    std::memcpy(o + 2, &hs, 2);
  }
}

double vec_dot_q8_1(dtype t, const std::byte* wrow, const std::byte* xq, int64_t K) {
  VKS_ASSERT(has_q8_1_dot(t), "vec_dot_q8_1: no integer dot for this type");
  const bool kq = traits(t).block_elems == 256;
  const uint64_t bb = row_bytes(t, kq ? 256 : 32);
  double acc = 0;
  for (int64_t i = 0; i < K / 32; ++i) {
    const sub_block s = kq ? k_sub_block(t, wrow + bb * (i / 8), static_cast<int>(i % 8)) : legacy_block(t, wrow + bb * i);
    const std::byte* x = xq + k_q8_1_block_bytes * i;
    int isum[2] = {0, 0};
    for (int l = 0; l < 32; ++l) isum[l / 16] += s.q[l] * static_cast<int8_t>(u8(x, 4 + l));
    const double d = half_at(x), sm = half_at(x + 2);
    acc += d * (static_cast<double>(s.a[0]) * isum[0] + static_cast<double>(s.a[1]) * isum[1]) + s.m * sm;
  }
  return acc;
}

}  // namespace vks::gpu
