// Host (de)quantisation of GGUF block formats (layouts in gpu/dtype.hpp) and the f16/bf16
// scalar conversions. The quantisers are simple round-to-nearest schemes that produce valid
// GGUF blocks (not bit-identical to ggml's search-based quantisers); dequantisation is exact
// to the format. Pure functions, thread-safe.
#include "gpu/quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/assert.hpp"

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

namespace {

void put_f16(std::byte* p, float f) {
  const uint16_t h = f32_to_f16(f);
  std::memcpy(p, &h, 2);
}
float get_f16(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}
uint8_t u8(const std::byte* p, int i) { return static_cast<uint8_t>(p[i]); }

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

// ---- q4_K: 256 elems; d, dmin (f16), scales[12] (6-bit pairs), qs[128] -------------------
void q4k_scale_min(int j, const std::byte* s, int& sc, int& m) {
  if (j < 4) {
    sc = u8(s, j) & 63;
    m = u8(s, j + 4) & 63;
  } else {
    sc = (u8(s, j + 4) & 0xf) | ((u8(s, j - 4) >> 6) << 4);
    m = (u8(s, j + 4) >> 4) | ((u8(s, j) >> 6) << 4);
  }
}
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
  auto* s = reinterpret_cast<uint8_t*>(b + 4);
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xf) | ((mn[j + 4] & 0xf) << 4));
  }
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
    q4k_scale_min(2 * g, s, sc0, m0);
    q4k_scale_min(2 * g + 1, s, sc1, m1);
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
      case dtype::i32: { int32_t v; std::memcpy(&v, b, 4); *y = static_cast<float>(v); break; }
    }
  }
}

}  // namespace vks::gpu
