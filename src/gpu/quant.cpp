// Host (de)quantisation of GGUF block formats (layouts in gpu/dtype.hpp) and the f16/bf16
// scalar conversions; the 32-element block types here, the 256-element k-quants added for
// #21 in quant_k.cpp. The quantisers are simple round-to-nearest schemes that produce valid
// GGUF blocks (not bit-identical to ggml's search-based quantisers); dequantisation is exact
// to the format. Pure functions, thread-safe.
#include "gpu/quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/assert.hpp"
#include "gpu/quant_blocks.hpp"

namespace vks::gpu {

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {                                                // subnormal or zero
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = absx >> 23;
    const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // value = m * 2^(e-150); half subnormal unit is 2^-24
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((absx >> 13) - (112u << 10));
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ffu, x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: normalise
      e = 113;
      while (!(m & 0x400u)) { m <<= 1; --e; }
      x = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16_to_f32(uint16_t h) {
  const uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

namespace blocks {

float e8m0_half(uint8_t e) {
  // 2^(e-128): e < 2 gives a subnormal (bit 21 + e), otherwise the exponent field e - 1.
  const uint32_t x = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

int nearest_index(const int8_t (&table)[16], float v) {
  int best = 0;
  float err = std::fabs(v - static_cast<float>(table[0]));
  for (int i = 1; i < 16; ++i)
    if (std::fabs(v - static_cast<float>(table[i])) < err) { err = std::fabs(v - static_cast<float>(table[i])); best = i; }
  return best;
}

// q4_K scale/min j (0..7) from the 12 packed bytes (6 bits each).
void unpack_scale_min_k4(int j, const std::byte* s, int& sc, int& m) {
  if (j < 4) {
    sc = u8(s, j) & 63;
    m = u8(s, j + 4) & 63;
  } else {
    sc = (u8(s, j + 4) & 0xf) | ((u8(s, j - 4) >> 6) << 4);
    m = (u8(s, j + 4) >> 4) | ((u8(s, j) >> 6) << 4);
  }
}
void pack_scale_min_k4(const uint8_t* sc, const uint8_t* mn, std::byte* sb) {
  auto* s = reinterpret_cast<uint8_t*>(sb);
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xf) | ((mn[j + 4] & 0xf) << 4));
  }
}

}  // namespace blocks

namespace {

using namespace blocks;

// ---- q8_0: 32 elems, f16 d, int8 q[32] --------------------------------------------------
void quantize_q8_0(const float* x, std::byte* b) {
  float amax = 0.f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
  put_f16(b, d);
  for (int i = 0; i < 32; ++i) b[2 + i] = static_cast<std::byte>(static_cast<int8_t>(std::lround(x[i] * id)));
}
void dequantize_q8_0(const std::byte* b, float* y) {
  const float d = get_f16(b);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(static_cast<int8_t>(u8(b, 2 + i)));
}

// ---- q4_0: 32 elems, f16 d, 16 bytes of nibbles ------------------------------------------
void quantize_q4_0(const float* x, std::byte* b) {
  float amax = 0.f, maxv = 0.f;  // signed value of largest magnitude
  for (int i = 0; i < 32; ++i)
    if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); maxv = x[i]; }
  const float d = maxv / -8.f, id = d != 0.f ? 1.f / d : 0.f;
  put_f16(b, d);
  for (int i = 0; i < 16; ++i) {
    const int q0 = std::clamp(static_cast<int>(std::floor(x[i] * id + 8.5f)), 0, 15);
    const int q1 = std::clamp(static_cast<int>(std::floor(x[i + 16] * id + 8.5f)), 0, 15);
    b[2 + i] = static_cast<std::byte>(q0 | (q1 << 4));
  }
}
void dequantize_q4_0(const std::byte* b, float* y) {
  const float d = get_f16(b);
  for (int i = 0; i < 16; ++i) {
    y[i] = d * static_cast<float>((u8(b, 2 + i) & 0xf) - 8);
    y[i + 16] = d * static_cast<float>((u8(b, 2 + i) >> 4) - 8);
  }
}

// ---- q4_1: 32 elems, f16 d, f16 m, 16 bytes of nibbles (as q4_0); x = d*q + m ------------
void quantize_q4_1(const float* x, std::byte* b) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < 32; ++i) { lo = std::min(lo, x[i]); hi = std::max(hi, x[i]); }
  put_f16(b, (hi - lo) / 15.f);
  put_f16(b + 2, lo);
  const float d = get_f16(b), m = get_f16(b + 2), id = d != 0.f ? 1.f / d : 0.f;
  for (int i = 0; i < 16; ++i) {
    const int q0 = std::clamp(static_cast<int>(std::lround((x[i] - m) * id)), 0, 15);
    const int q1 = std::clamp(static_cast<int>(std::lround((x[i + 16] - m) * id)), 0, 15);
    b[4 + i] = static_cast<std::byte>(q0 | (q1 << 4));
  }
}
void dequantize_q4_1(const std::byte* b, float* y) {
  const float d = get_f16(b), m = get_f16(b + 2);
  for (int i = 0; i < 16; ++i) {
    y[i] = d * static_cast<float>(u8(b, 4 + i) & 0xf) + m;
    y[i + 16] = d * static_cast<float>(u8(b, 4 + i) >> 4) + m;
  }
}

// ---- q5_0 / q5_1: 32 elems; f16 d (q5_1: then f16 m), uint32 qh (LE), 16 bytes nibbles ----
// Element i (< 16) is the low nibble of qs[i] with bit i of qh on top; element i + 16 the
// high nibble of qs[i] with bit i + 16. q5_0: x = d*(q - 16); q5_1: x = d*q + m.
void put_q5(std::byte* qhp, const int* q) {
  uint32_t qh = 0;
  for (int i = 0; i < 32; ++i) qh |= static_cast<uint32_t>((q[i] >> 4) & 1) << i;
  std::memcpy(qhp, &qh, 4);
  for (int i = 0; i < 16; ++i) qhp[4 + i] = static_cast<std::byte>((q[i] & 0xf) | ((q[i + 16] & 0xf) << 4));
}
void get_q5(const std::byte* qhp, int* q) {
  uint32_t qh;
  std::memcpy(&qh, qhp, 4);
  for (int i = 0; i < 16; ++i) {
    q[i] = (u8(qhp, 4 + i) & 0xf) | static_cast<int>(((qh >> i) & 1) << 4);
    q[i + 16] = (u8(qhp, 4 + i) >> 4) | static_cast<int>(((qh >> (i + 16)) & 1) << 4);
  }
}
void quantize_q5_0(const float* x, std::byte* b) {
  float amax = 0.f, maxv = 0.f;
  for (int i = 0; i < 32; ++i)
    if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); maxv = x[i]; }
  put_f16(b, maxv / -16.f);
  const float d = get_f16(b), id = d != 0.f ? 1.f / d : 0.f;
  int q[32];
  for (int i = 0; i < 32; ++i) q[i] = std::clamp(static_cast<int>(std::lround(x[i] * id)) + 16, 0, 31);
  put_q5(b + 2, q);
}
void dequantize_q5_0(const std::byte* b, float* y) {
  const float d = get_f16(b);
  int q[32];
  get_q5(b + 2, q);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(q[i] - 16);
}
void quantize_q5_1(const float* x, std::byte* b) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < 32; ++i) { lo = std::min(lo, x[i]); hi = std::max(hi, x[i]); }
  put_f16(b, (hi - lo) / 31.f);
  put_f16(b + 2, lo);
  const float d = get_f16(b), m = get_f16(b + 2), id = d != 0.f ? 1.f / d : 0.f;
  int q[32];
  for (int i = 0; i < 32; ++i) q[i] = std::clamp(static_cast<int>(std::lround((x[i] - m) * id)), 0, 31);
  put_q5(b + 4, q);
}
void dequantize_q5_1(const std::byte* b, float* y) {
  const float d = get_f16(b), m = get_f16(b + 2);
  int q[32];
  get_q5(b + 4, q);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(q[i]) + m;
}

// ---- iq4_nl: 32 elems, f16 d, 16 bytes of nibbles indexing kvalues_iq4nl -----------------
void quantize_iq4_nl(const float* x, std::byte* b) {
  float amax = 0.f, maxv = 0.f;
  for (int i = 0; i < 32; ++i)
    if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); maxv = x[i]; }
  put_f16(b, maxv / static_cast<float>(k_iq4nl_values[0]));
  const float d = get_f16(b), id = d != 0.f ? 1.f / d : 0.f;
  for (int i = 0; i < 16; ++i)
    b[2 + i] = static_cast<std::byte>(nearest_index(k_iq4nl_values, x[i] * id) |
                                      (nearest_index(k_iq4nl_values, x[i + 16] * id) << 4));
}
void dequantize_iq4_nl(const std::byte* b, float* y) {
  const float d = get_f16(b);
  for (int i = 0; i < 16; ++i) {
    y[i] = d * static_cast<float>(k_iq4nl_values[u8(b, 2 + i) & 0xf]);
    y[i + 16] = d * static_cast<float>(k_iq4nl_values[u8(b, 2 + i) >> 4]);
  }
}

// ---- mxfp4: 32 elems, uint8 e (E8M0 exponent), 16 bytes of E2M1 nibbles ------------------
// kvalues_mxfp4 holds twice the E2M1 values, so the scale is 2^(e-127) / 2.
void quantize_mxfp4(const float* x, std::byte* b) {
  float amax = 0.f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const int e = amax > 0.f ? std::clamp(static_cast<int>(std::floor(std::log2(amax))) - 2 + 127, 0, 254) : 0;
  b[0] = static_cast<std::byte>(e);
  const float d = e8m0_half(static_cast<uint8_t>(e)), id = d != 0.f ? 1.f / d : 0.f;
  for (int i = 0; i < 16; ++i)
    b[1 + i] = static_cast<std::byte>(nearest_index(k_mxfp4_values, x[i] * id) |
                                      (nearest_index(k_mxfp4_values, x[i + 16] * id) << 4));
}
void dequantize_mxfp4(const std::byte* b, float* y) {
  const float d = e8m0_half(u8(b, 0));
  for (int i = 0; i < 16; ++i) {
    y[i] = d * static_cast<float>(k_mxfp4_values[u8(b, 1 + i) & 0xf]);
    y[i + 16] = d * static_cast<float>(k_mxfp4_values[u8(b, 1 + i) >> 4]);
  }
}

// ---- q4_K: 256 elems; d, dmin (f16), scales[12] (6-bit pairs), qs[128] -------------------
void quantize_q4_K(const float* x, std::byte* b) {
  float scale[8], minv[8];  // per 32-sub-block: x ~= scale*q - minv, q in 0..15
  float max_scale = 0.f, max_min = 0.f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.f, hi = 0.f;
    for (int i = 0; i < 32; ++i) { lo = std::min(lo, x[32 * j + i]); hi = std::max(hi, x[32 * j + i]); }
    scale[j] = (hi - lo) / 15.f;
    minv[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minv[j]);
  }
  const float d = max_scale / 63.f, dmin = max_min / 63.f;
  put_f16(b, d);
  put_f16(b + 2, dmin);
  const float dq = get_f16(b), dminq = get_f16(b + 2);
  uint8_t sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(dq > 0.f ? std::clamp(static_cast<int>(std::lround(scale[j] / dq)), 0, 63) : 0);
    mn[j] = static_cast<uint8_t>(dminq > 0.f ? std::clamp(static_cast<int>(std::lround(minv[j] / dminq)), 0, 63) : 0);
  }
  pack_scale_min_k4(sc, mn, b + 4);
  auto* qs = reinterpret_cast<uint8_t*>(b + 16);
  for (int g = 0; g < 4; ++g) {
    uint8_t q[2][32];
    for (int h = 0; h < 2; ++h) {
      const int j = 2 * g + h;
      const float es = dq * sc[j], em = dminq * mn[j];
      for (int i = 0; i < 32; ++i) {
        const int v = es > 0.f ? static_cast<int>(std::lround((x[32 * j + i] + em) / es)) : 0;
        q[h][i] = static_cast<uint8_t>(std::clamp(v, 0, 15));
      }
    }
    for (int i = 0; i < 32; ++i) qs[32 * g + i] = static_cast<uint8_t>(q[0][i] | (q[1][i] << 4));
  }
}
void dequantize_q4_K(const std::byte* b, float* y) {
  const float d = get_f16(b), dmin = get_f16(b + 2);
  const std::byte* s = b + 4;
  const std::byte* qs = b + 16;
  for (int g = 0; g < 4; ++g) {
    int sc0, m0, sc1, m1;
    unpack_scale_min_k4(2 * g, s, sc0, m0);
    unpack_scale_min_k4(2 * g + 1, s, sc1, m1);
    for (int i = 0; i < 32; ++i) {
      const int q = u8(qs, 32 * g + i);
      y[64 * g + i] = d * static_cast<float>(sc0) * static_cast<float>(q & 0xf) - dmin * static_cast<float>(m0);
      y[64 * g + 32 + i] = d * static_cast<float>(sc1) * static_cast<float>(q >> 4) - dmin * static_cast<float>(m1);
    }
  }
}

// ---- q6_K: 256 elems; ql[128], qh[64], int8 scales[16], f16 d -----------------------------
// Element e: half n = e/128, quarter c = (e%128)/32, l = e%32. Low nibble from
// ql[64n + l + 32*(c&1)] (shift 4 if c >= 2), high 2 bits from qh[32n + l] >> 2c,
// scale index 8n + l/16 + 2c.
void quantize_q6_K(const float* x, std::byte* b) {
  float scale[16], max_scale = 0.f;  // signed scale per 16 elements: x ~= scale*q, q in -32..31
  for (int j = 0; j < 16; ++j) {
    float amax = 0.f, maxv = 0.f;
    for (int i = 0; i < 16; ++i)
      if (std::fabs(x[16 * j + i]) > amax) { amax = std::fabs(x[16 * j + i]); maxv = x[16 * j + i]; }
    scale[j] = maxv / -32.f;
    max_scale = std::max(max_scale, std::fabs(scale[j]));
  }
  const float d = max_scale / 127.f;
  put_f16(b + 208, d);
  const float dq = get_f16(b + 208);
  auto* ql = reinterpret_cast<uint8_t*>(b);
  auto* qh = reinterpret_cast<uint8_t*>(b + 128);
  auto* sc = reinterpret_cast<int8_t*>(b + 192);
  std::memset(b, 0, 192);
  for (int j = 0; j < 16; ++j)
    sc[j] = static_cast<int8_t>(dq > 0.f ? std::clamp(static_cast<int>(std::lround(scale[j] / dq)), -128, 127) : 0);
  for (int e = 0; e < 256; ++e) {
    const int n = e / 128, c = (e % 128) / 32, l = e % 32;
    const float es = dq * sc[8 * n + l / 16 + 2 * c];
    const int q = (es != 0.f ? std::clamp(static_cast<int>(std::lround(x[e] / es)), -32, 31) : 0) + 32;
    ql[64 * n + l + 32 * (c & 1)] |= static_cast<uint8_t>((q & 0xf) << (c >= 2 ? 4 : 0));
    qh[32 * n + l] |= static_cast<uint8_t>((q >> 4) << (2 * c));
  }
}
void dequantize_q6_K(const std::byte* b, float* y) {
  const float d = get_f16(b + 208);
  for (int e = 0; e < 256; ++e) {
    const int n = e / 128, c = (e % 128) / 32, l = e % 32;
    const int lo = (u8(b, 64 * n + l + 32 * (c & 1)) >> (c >= 2 ? 4 : 0)) & 0xf;
    const int hi = (u8(b, 128 + 32 * n + l) >> (2 * c)) & 3;
    const auto sc = static_cast<int8_t>(u8(b, 192 + 8 * n + l / 16 + 2 * c));
    y[e] = d * static_cast<float>(sc) * static_cast<float>((lo | (hi << 4)) - 32);
  }
}

}  // namespace

void quantize_row(dtype t, const float* src, std::byte* dst, int64_t n) {
  const auto tr = traits(t);
  VKS_ASSERT(n % tr.block_elems == 0, "quantize_row: n is not a multiple of the block size");
  const int64_t nb = n / tr.block_elems;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * tr.block_elems;
    std::byte* b = dst + i * tr.block_bytes;
    switch (t) {
      case dtype::f32: std::memcpy(b, x, 4); break;
      case dtype::f16: put_f16(b, *x); break;
      case dtype::bf16: { const uint16_t h = f32_to_bf16(*x); std::memcpy(b, &h, 2); break; }
      case dtype::q8_0: quantize_q8_0(x, b); break;
      case dtype::q4_0: quantize_q4_0(x, b); break;
      case dtype::q4_K: quantize_q4_K(x, b); break;
      case dtype::q6_K: quantize_q6_K(x, b); break;
      case dtype::q4_1: quantize_q4_1(x, b); break;
      case dtype::q5_0: quantize_q5_0(x, b); break;
      case dtype::q5_1: quantize_q5_1(x, b); break;
      case dtype::q2_K: quantize_q2_K(x, b); break;
      case dtype::q3_K: quantize_q3_K(x, b); break;
      case dtype::q5_K: quantize_q5_K(x, b); break;
      case dtype::iq4_nl: quantize_iq4_nl(x, b); break;
      case dtype::iq4_xs: quantize_iq4_xs(x, b); break;
      case dtype::mxfp4: quantize_mxfp4(x, b); break;
      case dtype::iq3_xxs: quantize_iq3_xxs(x, b); break;
      case dtype::iq3_s: quantize_iq3_s(x, b); break;
      case dtype::iq2_xxs: quantize_iq2_xxs(x, b); break;
      case dtype::iq2_xs: quantize_iq2_xs(x, b); break;
      case dtype::iq2_s: quantize_iq2_s(x, b); break;
      case dtype::iq1_s: quantize_iq1_s(x, b); break;
      case dtype::iq1_m: quantize_iq1_m(x, b); break;
      case dtype::i32: { const auto v = static_cast<int32_t>(*x); std::memcpy(b, &v, 4); break; }
    }
  }
}

void dequantize_row(dtype t, const std::byte* src, float* dst, int64_t n) {
  const auto tr = traits(t);
  VKS_ASSERT(n % tr.block_elems == 0, "dequantize_row: n is not a multiple of the block size");
  const int64_t nb = n / tr.block_elems;
  for (int64_t i = 0; i < nb; ++i) {
    const std::byte* b = src + i * tr.block_bytes;
    float* y = dst + i * tr.block_elems;
    switch (t) {
      case dtype::f32: std::memcpy(y, b, 4); break;
      case dtype::f16: *y = get_f16(b); break;
      case dtype::bf16: { uint16_t h; std::memcpy(&h, b, 2); *y = bf16_to_f32(h); break; }
      case dtype::q8_0: dequantize_q8_0(b, y); break;
      case dtype::q4_0: dequantize_q4_0(b, y); break;
      case dtype::q4_K: dequantize_q4_K(b, y); break;
      case dtype::q6_K: dequantize_q6_K(b, y); break;
      case dtype::q4_1: dequantize_q4_1(b, y); break;
      case dtype::q5_0: dequantize_q5_0(b, y); break;
      case dtype::q5_1: dequantize_q5_1(b, y); break;
      case dtype::q2_K: dequantize_q2_K(b, y); break;
      case dtype::q3_K: dequantize_q3_K(b, y); break;
      case dtype::q5_K: dequantize_q5_K(b, y); break;
      case dtype::iq4_nl: dequantize_iq4_nl(b, y); break;
      case dtype::iq4_xs: dequantize_iq4_xs(b, y); break;
      case dtype::mxfp4: dequantize_mxfp4(b, y); break;
      case dtype::iq3_xxs: dequantize_iq3_xxs(b, y); break;
      case dtype::iq3_s: dequantize_iq3_s(b, y); break;
      case dtype::iq2_xxs: dequantize_iq2_xxs(b, y); break;
      case dtype::iq2_xs: dequantize_iq2_xs(b, y); break;
      case dtype::iq2_s: dequantize_iq2_s(b, y); break;
      case dtype::iq1_s: dequantize_iq1_s(b, y); break;
      case dtype::iq1_m: dequantize_iq1_m(b, y); break;
      case dtype::i32: { int32_t v; std::memcpy(&v, b, 4); *y = static_cast<float>(v); break; }
    }
  }
}

}  // namespace vks::gpu
