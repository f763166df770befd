// Internal to gpu/quant*.cpp: the byte helpers, value tables and per-block (de)quantisers
// shared between quant.cpp (32-element blocks and the dispatch), quant_k.cpp (the
// 256-element k-quants and iq4_xs) and quant_iq.cpp (the grid i-quants). Block layouts: gpu/dtype.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace vks::gpu {

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

namespace blocks {

inline void put_f16(std::byte* p, float f) {
  const uint16_t h = f32_to_f16(f);
  std::memcpy(p, &h, 2);
}
inline float get_f16(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}
inline uint8_t u8(const std::byte* p, int i) { return static_cast<uint8_t>(p[i]); }

// ggml's non-linear 4-bit grid (iq4_nl, iq4_xs) and the doubled E2M1 values (mxfp4).
inline constexpr int8_t k_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};
inline constexpr int8_t k_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e-128): an E8M0 exponent times 1/2 (mxfp4's tables are doubled).
float e8m0_half(uint8_t e);
// The index of the table entry nearest v (the first of equals).
int nearest_index(const int8_t (&table)[16], float v);

// 256-element blocks (quant_k.cpp): x[256] <-> one block.
void quantize_q2_K(const float* x, std::byte* b);
void dequantize_q2_K(const std::byte* b, float* y);
void quantize_q3_K(const float* x, std::byte* b);
void dequantize_q3_K(const std::byte* b, float* y);
void quantize_q5_K(const float* x, std::byte* b);
void dequantize_q5_K(const std::byte* b, float* y);
void quantize_iq4_xs(const float* x, std::byte* b);
void dequantize_iq4_xs(const std::byte* b, float* y);
// The grid i-quants (quant_iq.cpp), 256-element blocks.
void quantize_iq3_xxs(const float* x, std::byte* b);
void dequantize_iq3_xxs(const std::byte* b, float* y);
void quantize_iq3_s(const float* x, std::byte* b);
void dequantize_iq3_s(const std::byte* b, float* y);
void quantize_iq2_xxs(const float* x, std::byte* b);
void dequantize_iq2_xxs(const std::byte* b, float* y);
void quantize_iq2_xs(const float* x, std::byte* b);
void dequantize_iq2_xs(const std::byte* b, float* y);
void quantize_iq2_s(const float* x, std::byte* b);
void dequantize_iq2_s(const std::byte* b, float* y);
void quantize_iq1_s(const float* x, std::byte* b);
void dequantize_iq1_s(const std::byte* b, float* y);
void quantize_iq1_m(const float* x, std::byte* b);
void dequantize_iq1_m(const std::byte* b, float* y);
// q4_K's packing of 8 6-bit (scale, min) pairs into 12 bytes (also q5_K's).
void pack_scale_min_k4(const uint8_t* sc, const uint8_t* mn, std::byte* s);
void unpack_scale_min_k4(int j, const std::byte* s, int& sc, int& m);

}  // namespace blocks
}  // namespace vks::gpu
