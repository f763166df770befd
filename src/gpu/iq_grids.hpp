// The i-quant grids: published constants of the GGUF formats (llama.cpp's ggml-common.h),
// copied into iq_grids.cpp by tools/gen-iq-grids.py. Point i of a grid packs its elements
// as little-endian bytes (byte j = element j): iq2 grids hold 8, 25 or 43, iq3 grids
// 4..62 (iq3xxs) or 1..15 (iq3s), iq1s int8 -1, 0 or 1. Read-only, thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace vks::gpu::iq {

extern const uint64_t iq2xxs_grid[256];
extern const uint64_t iq2xs_grid[512];
extern const uint64_t iq2s_grid[1024];
extern const uint32_t iq3xxs_grid[256];
extern const uint32_t iq3s_grid[512];
extern const uint64_t iq1s_grid[2048];

// ksigns_iq2xs: 7 sign bits with the 8th the parity (an even count of minus signs).
constexpr uint8_t ksigns(uint32_t i) {
  uint32_t p = i ^ (i >> 4);
  p ^= p >> 2;
  p ^= p >> 1;
  return static_cast<uint8_t>((i & 127u) | ((p & 1u) << 7));
}

// iq1_s / iq1_m: the offset added to every grid value (sign per group).
inline constexpr float k_iq1s_delta = 0.125f;

// The grids as the shaders read them: one storage buffer of uint words (bound at binding 7
// of every kernel that may decode an i-quant; common/dequant.glsl IQG_* mirrors these
// offsets). The 3-level grids (iq2: 8/25/43, iq1s: -1/0/1) pack a point as 8 2-bit level
// indices (16 bits; point i in the half i&1 of word i>>1); the iq3 grids are raw.
namespace shader_words {
inline constexpr uint32_t iq2xxs = 0, iq2xs = 128, iq2s = 384, iq3xxs = 896, iq3s = 1152, iq1s = 1664, total = 2688;
}
std::vector<uint32_t> shader_grid_words();

}  // namespace vks::gpu::iq
