// Host (de)quantisation of the 256-element block types q2_K, q3_K, q5_K and iq4_xs (layouts
// in gpu/dtype.hpp; the bit positions of each element are stated beside each pair).
// Quantisers are round-to-nearest with per-sub-block scales (valid blocks, not ggml's
// search-based choices); dequantisation is exact to the format as llama.cpp defines it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "gpu/quant_blocks.hpp"

namespace vks::gpu::blocks {

namespace {

int clampi(long v, int lo, int hi) { return static_cast<int>(std::clamp<long>(v, lo, hi)); }

// Signed value of largest magnitude among x[0..n).
float max_signed(const float* x, int n) {
  float amax = 0.f, maxv = 0.f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); maxv = x[i]; }
  return maxv;
}

}  // namespace

// ---- q2_K: scales[16] @0, qs[64] @16, f16 d @80, f16 dmin @82 -----------------------------
// Element e: 2 bits at qs[32*(e/128) + e%32] >> 2*((e%128)/32); sub-block e/16 has scale
// (scales[e/16] & 15) and min (scales[e/16] >> 4): x = d*sc*q - dmin*m.
void quantize_q2_K(const float* x, std::byte* b) {
  float scale[16], minv[16], max_scale = 0.f, max_min = 0.f;
  for (int j = 0; j < 16; ++j) {
    float lo = 0.f, hi = 0.f;
    for (int i = 0; i < 16; ++i) { lo = std::min(lo, x[16 * j + i]); hi = std::max(hi, x[16 * j + i]); }
    scale[j] = (hi - lo) / 3.f;
    minv[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minv[j]);
  }
  put_f16(b + 80, max_scale / 15.f);
  put_f16(b + 82, max_min / 15.f);
  const float d = get_f16(b + 80), dmin = get_f16(b + 82);
  std::memset(b, 0, 80);
  int sc[16], mn[16];
  for (int j = 0; j < 16; ++j) {
    sc[j] = d > 0.f ? clampi(std::lround(scale[j] / d), 0, 15) : 0;
    mn[j] = dmin > 0.f ? clampi(std::lround(minv[j] / dmin), 0, 15) : 0;
    b[j] = static_cast<std::byte>(sc[j] | (mn[j] << 4));
  }
  for (int e = 0; e < 256; ++e) {
    const float es = d * static_cast<float>(sc[e / 16]), em = dmin * static_cast<float>(mn[e / 16]);
    const int q = es > 0.f ? clampi(std::lround((x[e] + em) / es), 0, 3) : 0;
    b[16 + 32 * (e / 128) + e % 32] |= static_cast<std::byte>(q << (2 * ((e % 128) / 32)));
  }
}
void dequantize_q2_K(const std::byte* b, float* y) {
  const float d = get_f16(b + 80), dmin = get_f16(b + 82);
  for (int e = 0; e < 256; ++e) {
    const int s = u8(b, e / 16);
    const int q = (u8(b, 16 + 32 * (e / 128) + e % 32) >> (2 * ((e % 128) / 32))) & 3;
    y[e] = d * static_cast<float>(s & 15) * static_cast<float>(q) - dmin * static_cast<float>(s >> 4);
  }
}

// ---- q3_K: hmask[32] @0, qs[64] @32, scales[12] @96, f16 d @108 --------------------------
// Element e: low 2 bits as q2_K's (qs[32*(e/128) + e%32] >> 2*((e%128)/32)), high bit
// hmask[e%32] >> (e/32); q = low2 - (high ? 0 : 4) in -4..3. Scale i = e/16 (6 bits, stored
// +32): low 4 bits in scales[i%8] >> 4*(i/8), high 2 in scales[8 + i%4] >> 2*(i/4).
void quantize_q3_K(const float* x, std::byte* b) {
  float scale[16], max_scale = 0.f;
  for (int j = 0; j < 16; ++j) {
    scale[j] = max_signed(x + 16 * j, 16) / -4.f;
    max_scale = std::max(max_scale, std::fabs(scale[j]));
  }
  put_f16(b + 108, max_scale / 31.f);
  const float d = get_f16(b + 108);
  std::memset(b, 0, 108);
  int sc[16];
  for (int i = 0; i < 16; ++i) {
    sc[i] = d > 0.f ? clampi(std::lround(scale[i] / d), -32, 31) : 0;
    const int u = sc[i] + 32;
    b[96 + i % 8] |= static_cast<std::byte>((u & 15) << (4 * (i / 8)));
    b[104 + i % 4] |= static_cast<std::byte>((u >> 4) << (2 * (i / 4)));
  }
  for (int e = 0; e < 256; ++e) {
    const float es = d * static_cast<float>(sc[e / 16]);
    const int q = (es != 0.f ? clampi(std::lround(x[e] / es), -4, 3) : 0) + 4;
    b[32 + 32 * (e / 128) + e % 32] |= static_cast<std::byte>((q & 3) << (2 * ((e % 128) / 32)));
    b[e % 32] |= static_cast<std::byte>((q >> 2) << (e / 32));
  }
}
void dequantize_q3_K(const std::byte* b, float* y) {
  const float d = get_f16(b + 108);
  int sc[16];
  for (int i = 0; i < 16; ++i)
    sc[i] = (((u8(b, 96 + i % 8) >> (4 * (i / 8))) & 15) | (((u8(b, 104 + i % 4) >> (2 * (i / 4))) & 3) << 4)) - 32;
  for (int e = 0; e < 256; ++e) {
    const int lo = (u8(b, 32 + 32 * (e / 128) + e % 32) >> (2 * ((e % 128) / 32))) & 3;
    const int hi = (u8(b, e % 32) >> (e / 32)) & 1;
    y[e] = d * static_cast<float>(sc[e / 16]) * static_cast<float>(lo - (hi ? 0 : 4));
  }
}

// ---- q5_K: f16 d @0, f16 dmin @2, scales[12] @4 (as q4_K), qh[32] @16, qs[128] @48 -------
// Element e, sub-block s = e/32: low nibble qs[32*(s/2) + e%32] >> 4*(s%2), high bit
// qh[e%32] >> s; x = d*sc_s*q - dmin*m_s.
void quantize_q5_K(const float* x, std::byte* b) {
  float scale[8], minv[8], max_scale = 0.f, max_min = 0.f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.f, hi = 0.f;
    for (int i = 0; i < 32; ++i) { lo = std::min(lo, x[32 * j + i]); hi = std::max(hi, x[32 * j + i]); }
    scale[j] = (hi - lo) / 31.f;
    minv[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minv[j]);
  }
  put_f16(b, max_scale / 63.f);
  put_f16(b + 2, max_min / 63.f);
  const float d = get_f16(b), dmin = get_f16(b + 2);
  uint8_t sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(d > 0.f ? clampi(std::lround(scale[j] / d), 0, 63) : 0);
    mn[j] = static_cast<uint8_t>(dmin > 0.f ? clampi(std::lround(minv[j] / dmin), 0, 63) : 0);
  }
  pack_scale_min_k4(sc, mn, b + 4);
  std::memset(b + 16, 0, 160);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    const float es = d * sc[s], em = dmin * mn[s];
    const int q = es > 0.f ? clampi(std::lround((x[e] + em) / es), 0, 31) : 0;
    b[48 + 32 * (s / 2) + e % 32] |= static_cast<std::byte>((q & 15) << (4 * (s % 2)));
    b[16 + e % 32] |= static_cast<std::byte>((q >> 4) << s);
  }
}
void dequantize_q5_K(const std::byte* b, float* y) {
  const float d = get_f16(b), dmin = get_f16(b + 2);
  for (int s = 0; s < 8; ++s) {
    int sc, m;
    unpack_scale_min_k4(s, b + 4, sc, m);
    for (int l = 0; l < 32; ++l) {
      const int q = ((u8(b, 48 + 32 * (s / 2) + l) >> (4 * (s % 2))) & 15) | (((u8(b, 16 + l) >> s) & 1) << 4);
      y[32 * s + l] = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
    }
  }
}

// ---- iq4_xs: f16 d @0, uint16 scales_h @2, scales_l[4] @4, qs[128] @8 --------------------
// Sub-block s = e/32 (32 elements): ls = (scales_l[s/2] >> 4*(s%2)) & 15 | ((scales_h >> 2s)
// & 3) << 4; its 16 bytes qs[16s..]: element l < 16 the low nibble of byte l, l >= 16 the
// high nibble of byte l-16; x = d*(ls-32)*kvalues_iq4nl[nibble].
void quantize_iq4_xs(const float* x, std::byte* b) {
  float scale[8], max_scale = 0.f;
  for (int s = 0; s < 8; ++s) {
    scale[s] = max_signed(x + 32 * s, 32) / static_cast<float>(k_iq4nl_values[0]);
    max_scale = std::max(max_scale, std::fabs(scale[s]));
  }
  put_f16(b, max_scale / 31.f);
  const float d = get_f16(b);
  std::memset(b + 2, 0, 134);
  uint16_t sh = 0;
  for (int s = 0; s < 8; ++s) {
    const int ls = (d > 0.f ? clampi(std::lround(scale[s] / d), -32, 31) : 0) + 32;
    b[4 + s / 2] |= static_cast<std::byte>((ls & 15) << (4 * (s % 2)));
    sh = static_cast<uint16_t>(sh | ((ls >> 4) << (2 * s)));
    const float es = d * static_cast<float>(ls - 32), ie = es != 0.f ? 1.f / es : 0.f;
    for (int l = 0; l < 16; ++l)
      b[8 + 16 * s + l] = static_cast<std::byte>(nearest_index(k_iq4nl_values, x[32 * s + l] * ie) |
                                                 (nearest_index(k_iq4nl_values, x[32 * s + 16 + l] * ie) << 4));
  }
  std::memcpy(b + 2, &sh, 2);
}
void dequantize_iq4_xs(const std::byte* b, float* y) {
  const float d = get_f16(b);
  const int sh = u8(b, 2) | (u8(b, 3) << 8);
  for (int s = 0; s < 8; ++s) {
    const int ls = ((u8(b, 4 + s / 2) >> (4 * (s % 2))) & 15) | (((sh >> (2 * s)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int l = 0; l < 16; ++l) {
      y[32 * s + l] = dl * static_cast<float>(k_iq4nl_values[u8(b, 8 + 16 * s + l) & 15]);
      y[32 * s + 16 + l] = dl * static_cast<float>(k_iq4nl_values[u8(b, 8 + 16 * s + l) >> 4]);
    }
  }
}

}  // namespace vks::gpu::blocks
