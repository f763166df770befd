// Host (de)quantisation of the grid i-quants iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq2_s, iq1_s
// and iq1_m (layouts in gpu/dtype.hpp, grids in gpu/iq_grids.hpp; bit positions beside
// each pair). Dequantisation is exact to the format as llama.cpp defines it. The quantisers
// are ours and simple: a scale per sub-block from its largest magnitude (iq1: its RMS),
// each element rounded to the nearest grid level, then the grid point nearest that level
// vector (a lookup table built once per grid), so they need no importance matrix and make
// valid blocks fast; they are not ggml's search-based quantisers.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "gpu/iq_grids.hpp"
#include "gpu/quant_blocks.hpp"

namespace vks::gpu::blocks {

namespace {

int clampi(long v, int lo, int hi) { return static_cast<int>(std::clamp<long>(v, lo, hi)); }
uint8_t grid_byte(uint64_t point, int j) { return static_cast<uint8_t>(point >> (8 * j)); }
float sign_of(uint32_t signs, int j) { return (signs >> j) & 1u ? -1.f : 1.f; }

// ---- nearest grid point ------------------------------------------------------------------
// A grid of n_points points of n_elems elements, each element one of n_levels values. The
// lookup maps every vector of per-element level indices (a base-n_levels code, element 0
// least significant) to the grid point nearest it in L2 over the level values.
struct grid_lut {
  int n_elems = 0, n_levels = 0;
  std::vector<float> levels;
  std::vector<uint16_t> nearest;  // by code

  // Per-element nearest level of v[0..n_elems) (already divided by the scale) as a code.
  int code_of(const float* v) const {
    int code = 0, mul = 1;
    for (int j = 0; j < n_elems; ++j, mul *= n_levels) {
      int best = 0;
      for (int l = 1; l < n_levels; ++l)
        if (std::fabs(v[j] - levels[size_t(l)]) < std::fabs(v[j] - levels[size_t(best)])) best = l;
      code += best * mul;
    }
    return code;
  }
  int point_of(const float* v) const { return nearest[size_t(code_of(v))]; }
};

// level_of(point, j): the level index of element j of grid point `point`.
template <class LevelOf>
grid_lut build_lut(int n_elems, std::vector<float> levels, int n_points, LevelOf level_of) {
  grid_lut g;
  g.n_elems = n_elems;
  g.n_levels = static_cast<int>(levels.size());
  g.levels = std::move(levels);
  int n_codes = 1;
  for (int j = 0; j < n_elems; ++j) n_codes *= g.n_levels;
  std::vector<uint8_t> pl(size_t(n_points * n_elems));
  for (int p = 0; p < n_points; ++p)
    for (int j = 0; j < n_elems; ++j) pl[size_t(p * n_elems + j)] = static_cast<uint8_t>(level_of(p, j));
  g.nearest.resize(size_t(n_codes));
  std::vector<float> v(static_cast<size_t>(n_elems), 0.f);
  for (int c = 0; c < n_codes; ++c) {
    for (int j = 0, r = c; j < n_elems; ++j, r /= g.n_levels) v[size_t(j)] = g.levels[size_t(r % g.n_levels)];
    float best = INFINITY;
    for (int p = 0; p < n_points; ++p) {
      float e = 0.f;
      for (int j = 0; j < n_elems; ++j) {
        const float dv = g.levels[pl[size_t(p * n_elems + j)]] - v[size_t(j)];
        e += dv * dv;
      }
      if (e < best) { best = e; g.nearest[size_t(c)] = static_cast<uint16_t>(p); }
    }
  }
  return g;
}

// The iq2 grids' bytes are 8, 25, 43 (levels 0, 1, 2).
// The lookup of the iq2 grid with n_points points (256: iq2xxs, 512: iq2xs, 1024: iq2s).
const grid_lut& iq2_lut(int n_points) {
  auto make = [](const uint64_t* g, int n) {
    return build_lut(8, {8.f, 25.f, 43.f}, n, [g](int p, int j) {
      const uint8_t b = grid_byte(g[p], j);
      return b == 8 ? 0 : b == 25 ? 1 : 2;
    });
  };
  static const grid_lut xxs = make(iq::iq2xxs_grid, 256), xs = make(iq::iq2xs_grid, 512),
                        s = make(iq::iq2s_grid, 1024);
  return n_points == 256 ? xxs : n_points == 512 ? xs : s;
}
// iq3xxs bytes: 4, 12, ..., 52, 62; iq3s bytes: 1, 3, ..., 15.
const grid_lut& iq3xxs_lut() {
  static const grid_lut g = build_lut(4, {4, 12, 20, 28, 36, 44, 52, 62}, 256, [](int p, int j) {
    const int b = grid_byte(iq::iq3xxs_grid[p], j);
    return b == 62 ? 7 : (b - 4) / 8;
  });
  return g;
}
const grid_lut& iq3s_lut() {
  static const grid_lut g = build_lut(4, {1, 3, 5, 7, 9, 11, 13, 15}, 512,
                                      [](int p, int j) { return (grid_byte(iq::iq3s_grid[p], j) - 1) / 2; });
  return g;
}
// iq1s bytes: int8 -1, 0, 1.
const grid_lut& iq1s_lut() {
  static const grid_lut g = build_lut(8, {-1.f, 0.f, 1.f}, 2048, [](int p, int j) {
    return static_cast<int>(static_cast<int8_t>(grid_byte(iq::iq1s_grid[p], j))) + 1;
  });
  return g;
}

// ---- shared quantiser steps --------------------------------------------------------------
// Sign bits of x[0..8) (bit j: x[j] < 0). even: the count of minus signs is made even by
// flipping the sign of the smallest magnitude (the formats' 8th sign is the parity).
uint32_t sign_bits(const float* x, bool even) {
  uint32_t s = 0;
  int smallest = 0;
  for (int j = 0; j < 8; ++j) {
    if (x[j] < 0.f) s |= 1u << j;
    if (std::fabs(x[j]) < std::fabs(x[smallest])) smallest = j;
  }
  if (even && (std::popcount(s) & 1)) s ^= 1u << smallest;
  return s;
}
// Magnitudes of x[0..n) over db (0 where db is 0).
void magnitudes(const float* x, int n, float db, float* a) {
  const float id = db > 0.f ? 1.f / db : 0.f;
  for (int j = 0; j < n; ++j) a[j] = std::fabs(x[j]) * id;
}
float amax_of(const float* x, int n) {
  float m = 0.f;
  for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}
// The 4-bit code ls of a wanted sub-block scale s given db(ls) = d*(0.5+ls)*k.
int half_step_code(float s, float d, float k) { return d > 0.f ? clampi(std::lround(s / (d * k) - 0.5f), 0, 15) : 0; }

}  // namespace

// ---- iq3_xxs: f16 d @0, qs[64] @2, uint32 aux[8] @66 --------------------------------------
// Sub-block ib (32 elements): aux[ib] = 4 x 7-bit sign indices (group l at bit 7l) | ls << 28;
// group l (8 elements) is grid points qs[8ib+2l] (elements 0-3) and qs[8ib+2l+1] (4-7),
// signs ksigns(index); x = d*(0.5+ls)*0.5 * grid * sign.
void quantize_iq3_xxs(const float* x, std::byte* b) {
  const auto& lut = iq3xxs_lut();
  float s[8], smax = 0.f;
  for (int ib = 0; ib < 8; ++ib) smax = std::max(smax, s[ib] = amax_of(x + 32 * ib, 32) / 62.f);
  put_f16(b, smax / (15.5f * 0.5f));
  const float d = get_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = half_step_code(s[ib], d, 0.5f);
    const float db = d * (0.5f + static_cast<float>(ls)) * 0.5f;
    uint32_t aux = static_cast<uint32_t>(ls) << 28;
    for (int l = 0; l < 4; ++l) {
      const float* g = x + 32 * ib + 8 * l;
      float a[8];
      magnitudes(g, 8, db, a);
      b[2 + 8 * ib + 2 * l] = static_cast<std::byte>(lut.point_of(a));
      b[2 + 8 * ib + 2 * l + 1] = static_cast<std::byte>(lut.point_of(a + 4));
      aux |= (sign_bits(g, true) & 127u) << (7 * l);
    }
    std::memcpy(b + 66 + 4 * ib, &aux, 4);
  }
}
void dequantize_iq3_xxs(const std::byte* b, float* y) {
  const float d = get_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux;
    std::memcpy(&aux, b + 66 + 4 * ib, 4);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l, y += 8) {
      const uint32_t signs = iq::ksigns((aux >> (7 * l)) & 127u);
      const uint32_t g1 = iq::iq3xxs_grid[u8(b, 2 + 8 * ib + 2 * l)], g2 = iq::iq3xxs_grid[u8(b, 3 + 8 * ib + 2 * l)];
      for (int j = 0; j < 4; ++j) {
        y[j] = db * static_cast<float>(grid_byte(g1, j)) * sign_of(signs, j);
        y[j + 4] = db * static_cast<float>(grid_byte(g2, j)) * sign_of(signs, j + 4);
      }
    }
  }
}

// ---- iq3_s: f16 d @0, qs[64] @2, qh[8] @66, signs[32] @74, scales[4] @106 ----------------
// Sub-block ib: grid point k (0..7, 4 elements each) has index qs[8ib+k] | bit k of qh[ib]
// << 8; group l's signs are signs[4ib+l] (bit j: element j); ls is nibble ib%2 of
// scales[ib/2]; x = d*(1+2ls) * grid * sign.
void quantize_iq3_s(const float* x, std::byte* b) {
  const auto& lut = iq3s_lut();
  float s[8], smax = 0.f;
  for (int ib = 0; ib < 8; ++ib) smax = std::max(smax, s[ib] = amax_of(x + 32 * ib, 32) / 15.f);
  put_f16(b, smax / 31.f);
  const float d = get_f16(b);
  std::memset(b + 2, 0, 108);
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = d > 0.f ? clampi(std::lround((s[ib] / d - 1.f) * 0.5f), 0, 15) : 0;
    const float db = d * static_cast<float>(1 + 2 * ls);
    b[106 + ib / 2] |= static_cast<std::byte>(ls << (4 * (ib % 2)));
    for (int l = 0; l < 4; ++l) {
      const float* g = x + 32 * ib + 8 * l;
      float a[8];
      magnitudes(g, 8, db, a);
      for (int h = 0; h < 2; ++h) {
        const int p = lut.point_of(a + 4 * h), k = 2 * l + h;
        b[2 + 8 * ib + k] = static_cast<std::byte>(p & 255);
        b[66 + ib] |= static_cast<std::byte>((p >> 8) << k);
      }
      b[74 + 4 * ib + l] = static_cast<std::byte>(sign_bits(g, false));
    }
  }
}
void dequantize_iq3_s(const std::byte* b, float* y) {
  const float d = get_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    const float db = d * static_cast<float>(1 + 2 * ((u8(b, 106 + ib / 2) >> (4 * (ib % 2))) & 15));
    const int qh = u8(b, 66 + ib);
    for (int l = 0; l < 4; ++l, y += 8) {
      const uint32_t signs = u8(b, 74 + 4 * ib + l);
      const uint32_t g1 = iq::iq3s_grid[u8(b, 2 + 8 * ib + 2 * l) | (((qh >> (2 * l)) & 1) << 8)];
      const uint32_t g2 = iq::iq3s_grid[u8(b, 3 + 8 * ib + 2 * l) | (((qh >> (2 * l + 1)) & 1) << 8)];
      for (int j = 0; j < 4; ++j) {
        y[j] = db * static_cast<float>(grid_byte(g1, j)) * sign_of(signs, j);
        y[j + 4] = db * static_cast<float>(grid_byte(g2, j)) * sign_of(signs, j + 4);
      }
    }
  }
}

// ---- iq2_xxs: f16 d @0, uint32 pairs (q0, q1)[8] @2 ---------------------------------------
// Sub-block ib: byte l of q0 = 8 ib + 0 is group l's grid index (8 elements); q1 = 4 x 7-bit
// sign indices (bit 7l) | ls << 28; x = d*(0.5+ls)*0.25 * grid * ksigns sign.
void quantize_iq2_xxs(const float* x, std::byte* b) {
  const auto& lut = iq2_lut(256);
  float s[8], smax = 0.f;
  for (int ib = 0; ib < 8; ++ib) smax = std::max(smax, s[ib] = amax_of(x + 32 * ib, 32) / 43.f);
  put_f16(b, smax / (15.5f * 0.25f));
  const float d = get_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = half_step_code(s[ib], d, 0.25f);
    const float db = d * (0.5f + static_cast<float>(ls)) * 0.25f;
    uint32_t q0 = 0, q1 = static_cast<uint32_t>(ls) << 28;
    for (int l = 0; l < 4; ++l) {
      const float* g = x + 32 * ib + 8 * l;
      float a[8];
      magnitudes(g, 8, db, a);
      q0 |= static_cast<uint32_t>(lut.point_of(a)) << (8 * l);
      q1 |= (sign_bits(g, true) & 127u) << (7 * l);
    }
    std::memcpy(b + 2 + 8 * ib, &q0, 4);
    std::memcpy(b + 6 + 8 * ib, &q1, 4);
  }
}
void dequantize_iq2_xxs(const std::byte* b, float* y) {
  const float d = get_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t q0, q1;
    std::memcpy(&q0, b + 2 + 8 * ib, 4);
    std::memcpy(&q1, b + 6 + 8 * ib, 4);
    const float db = d * (0.5f + static_cast<float>(q1 >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l, y += 8) {
      const uint64_t g = iq::iq2xxs_grid[(q0 >> (8 * l)) & 255u];
      const uint32_t signs = iq::ksigns((q1 >> (7 * l)) & 127u);
      for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid_byte(g, j)) * sign_of(signs, j);
    }
  }
}

// ---- iq2_xs: f16 d @0, uint16 qs[32] @2, scales[8] @66 ------------------------------------
// Group g = e/8: qs[g] = 9-bit grid index | 7-bit sign index << 9; sub-block ib = g/4 has
// ls = scales[ib] & 15 for its groups 0-1, >> 4 for 2-3; x = d*(0.5+ls)*0.25 * grid * sign.
void quantize_iq2_xs(const float* x, std::byte* b) {
  const auto& lut = iq2_lut(512);
  float s[16], smax = 0.f;
  for (int h = 0; h < 16; ++h) smax = std::max(smax, s[h] = amax_of(x + 16 * h, 16) / 43.f);
  put_f16(b, smax / (15.5f * 0.25f));
  const float d = get_f16(b);
  std::memset(b + 66, 0, 8);
  for (int h = 0; h < 16; ++h) {
    const int ls = half_step_code(s[h], d, 0.25f);
    const float db = d * (0.5f + static_cast<float>(ls)) * 0.25f;
    b[66 + h / 2] |= static_cast<std::byte>(ls << (4 * (h % 2)));
    for (int k = 0; k < 2; ++k) {
      const int g = 2 * h + k;
      float a[8];
      magnitudes(x + 8 * g, 8, db, a);
      const auto q = static_cast<uint16_t>(lut.point_of(a) | ((sign_bits(x + 8 * g, true) & 127u) << 9));
      std::memcpy(b + 2 + 2 * g, &q, 2);
    }
  }
}
void dequantize_iq2_xs(const std::byte* b, float* y) {
  const float d = get_f16(b);
  for (int g = 0; g < 32; ++g, y += 8) {
    const int sc = u8(b, 66 + g / 4);
    const float db = d * (0.5f + static_cast<float>((g % 4) < 2 ? sc & 15 : sc >> 4)) * 0.25f;
    const uint32_t q = u8(b, 2 + 2 * g) | (u8(b, 3 + 2 * g) << 8);
    const uint64_t p = iq::iq2xs_grid[q & 511u];
    const uint32_t signs = iq::ksigns(q >> 9);
    for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid_byte(p, j)) * sign_of(signs, j);
  }
}

// ---- iq2_s: f16 d @0, qs[32] @2, signs[32] @34, qh[8] @66, scales[8] @74 ------------------
// Group g = e/8 (sub-block ib = g/4, l = g%4): grid index qs[g] | ((qh[ib] >> 2l) & 3) << 8,
// signs[g] bit j for element j; ls as iq2_xs; x = d*(0.5+ls)*0.25 * grid * sign.
void quantize_iq2_s(const float* x, std::byte* b) {
  const auto& lut = iq2_lut(1024);
  float s[16], smax = 0.f;
  for (int h = 0; h < 16; ++h) smax = std::max(smax, s[h] = amax_of(x + 16 * h, 16) / 43.f);
  put_f16(b, smax / (15.5f * 0.25f));
  const float d = get_f16(b);
  std::memset(b + 2, 0, 80);
  for (int h = 0; h < 16; ++h) {
    const int ls = half_step_code(s[h], d, 0.25f);
    const float db = d * (0.5f + static_cast<float>(ls)) * 0.25f;
    b[74 + h / 2] |= static_cast<std::byte>(ls << (4 * (h % 2)));
    for (int k = 0; k < 2; ++k) {
      const int g = 2 * h + k;
      float a[8];
      magnitudes(x + 8 * g, 8, db, a);
      const int p = lut.point_of(a);
      b[2 + g] = static_cast<std::byte>(p & 255);
      b[66 + g / 4] |= static_cast<std::byte>((p >> 8) << (2 * (g % 4)));
      b[34 + g] = static_cast<std::byte>(sign_bits(x + 8 * g, false));
    }
  }
}
void dequantize_iq2_s(const std::byte* b, float* y) {
  const float d = get_f16(b);
  for (int g = 0; g < 32; ++g, y += 8) {
    const int sc = u8(b, 74 + g / 4);
    const float db = d * (0.5f + static_cast<float>((g % 4) < 2 ? sc & 15 : sc >> 4)) * 0.25f;
    const uint64_t p = iq::iq2s_grid[u8(b, 2 + g) | (((u8(b, 66 + g / 4) >> (2 * (g % 4))) & 3) << 8)];
    const uint32_t signs = u8(b, 34 + g);
    for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid_byte(p, j)) * sign_of(signs, j);
  }
}

// ---- iq1_s / iq1_m shared step -------------------------------------------------------------
namespace {
// Grid index of group x[0..8) for scale dl and offset delta: each element rounded to
// -1/0/1 after removing delta, then the nearest grid point.
int iq1_point(const float* x, float dl, float delta) {
  float v[8];
  const float id = dl > 0.f ? 1.f / dl : 0.f;
  for (int j = 0; j < 8; ++j) v[j] = x[j] * id - delta;
  return iq1s_lut().point_of(v);
}
float rms_of(const float* x, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return static_cast<float>(std::sqrt(s / n));
}
float mean_of(const float* x, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += x[i];
  return static_cast<float>(s / n);
}
// Wanted scale of a 3-level group: 1.2 x its RMS (near the optimum for Gaussian weights).
constexpr float k_iq1_rms_scale = 1.2f;
int odd_code(float s, float d) { return d > 0.f ? clampi(std::lround((s / d - 1.f) * 0.5f), 0, 7) : 0; }
float iq1_value(uint64_t point, int j, float dl, float delta) {
  return dl * (static_cast<float>(static_cast<int8_t>(grid_byte(point, j))) + delta);
}
}  // namespace

// ---- iq1_s: f16 d @0, qs[32] @2, uint16 qh[8] @34 -----------------------------------------
// Sub-block ib, group l: grid index qs[4ib+l] | ((qh[ib] >> 3l) & 7) << 8; ls = (qh[ib] >>
// 12) & 7; delta = -1/8 if bit 15 else 1/8; x = d*(2ls+1) * (grid + delta).
void quantize_iq1_s(const float* x, std::byte* b) {
  float s[8], smax = 0.f;
  for (int ib = 0; ib < 8; ++ib) smax = std::max(smax, s[ib] = k_iq1_rms_scale * rms_of(x + 32 * ib, 32));
  put_f16(b, smax / 15.f);
  const float d = get_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = odd_code(s[ib], d);
    const float dl = d * static_cast<float>(2 * ls + 1);
    const bool neg = mean_of(x + 32 * ib, 32) < 0.f;
    const float delta = neg ? -iq::k_iq1s_delta : iq::k_iq1s_delta;
    uint32_t qh = static_cast<uint32_t>(ls) << 12 | (neg ? 0x8000u : 0u);
    for (int l = 0; l < 4; ++l) {
      const int p = iq1_point(x + 32 * ib + 8 * l, dl, delta);
      b[2 + 4 * ib + l] = static_cast<std::byte>(p & 255);
      qh |= static_cast<uint32_t>(p >> 8) << (3 * l);
    }
    const auto q = static_cast<uint16_t>(qh);
    std::memcpy(b + 34 + 2 * ib, &q, 2);
  }
}
void dequantize_iq1_s(const std::byte* b, float* y) {
  const float d = get_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    const uint32_t qh = u8(b, 34 + 2 * ib) | (u8(b, 35 + 2 * ib) << 8);
    const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
    const float delta = qh & 0x8000u ? -iq::k_iq1s_delta : iq::k_iq1s_delta;
    for (int l = 0; l < 4; ++l, y += 8) {
      const uint64_t p = iq::iq1s_grid[u8(b, 2 + 4 * ib + l) | (((qh >> (3 * l)) & 7) << 8)];
      for (int j = 0; j < 8; ++j) y[j] = iq1_value(p, j, dl, delta);
    }
  }
}

// ---- iq1_m: qs[32] @0, qh[16] @32, uint16 sc[4] @48 ---------------------------------------
// Group g = e/8 (sub-block ib = g/4, l = g%4): grid index qs[g] | ((qh[g/2] >> 4(g%2)) & 7)
// << 8, delta -1/8 if bit 3 + 4(g%2) of qh[g/2] else 1/8; half h = g/2 (16 elements) has ls =
// (sc[h/4] >> 3(h%4)) & 7; d is the f16 of the sc[i] >> 12 nibbles (sc[0]'s lowest);
// x = d*(2ls+1) * (grid + delta).
void quantize_iq1_m(const float* x, std::byte* b) {
  float s[16], smax = 0.f;
  for (int h = 0; h < 16; ++h) smax = std::max(smax, s[h] = k_iq1_rms_scale * rms_of(x + 16 * h, 16));
  const uint16_t dh = f32_to_f16(smax / 15.f);
  const float d = f16_to_f32(dh);
  std::memset(b, 0, 56);
  uint16_t sc[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) sc[i] = static_cast<uint16_t>(((dh >> (4 * i)) & 15) << 12);
  for (int h = 0; h < 16; ++h) {
    const int ls = odd_code(s[h], d);
    const float dl = d * static_cast<float>(2 * ls + 1);
    sc[h / 4] = static_cast<uint16_t>(sc[h / 4] | (ls << (3 * (h % 4))));
    for (int k = 0; k < 2; ++k) {
      const int g = 2 * h + k;
      const bool neg = mean_of(x + 8 * g, 8) < 0.f;
      const int p = iq1_point(x + 8 * g, dl, neg ? -iq::k_iq1s_delta : iq::k_iq1s_delta);
      b[g] = static_cast<std::byte>(p & 255);
      b[32 + g / 2] |= static_cast<std::byte>(((p >> 8) | (neg ? 8 : 0)) << (4 * (g % 2)));
    }
  }
  std::memcpy(b + 48, sc, 8);
}
void dequantize_iq1_m(const std::byte* b, float* y) {
  uint16_t sc[4];
  std::memcpy(sc, b + 48, 8);
  const auto dh = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
  const float d = f16_to_f32(dh);
  for (int g = 0; g < 32; ++g, y += 8) {
    const int h = g / 2, qh = u8(b, 32 + g / 2) >> (4 * (g % 2));
    const float dl = d * static_cast<float>(2 * ((sc[h / 4] >> (3 * (h % 4))) & 7) + 1);
    const float delta = qh & 8 ? -iq::k_iq1s_delta : iq::k_iq1s_delta;
    const uint64_t p = iq::iq1s_grid[u8(b, g) | ((qh & 7) << 8)];
    for (int j = 0; j < 8; ++j) y[j] = iq1_value(p, j, dl, delta);
  }
}

}  // namespace vks::gpu::blocks
