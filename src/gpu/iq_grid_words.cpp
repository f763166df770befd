// The i-quant grids packed for the shaders (layout: gpu/iq_grids.hpp shader_words), built
// from the raw tables of iq_grids.cpp. Pure; the Vulkan backend uploads the words once.
#include <cstddef>

#include "base/assert.hpp"
#include "gpu/iq_grids.hpp"

namespace vks::gpu::iq {

namespace {

// Point p of a 3-level grid as 8 2-bit level indices (element j at bits 2j).
template <class LevelOf>
void pack_points(const uint64_t* grid, uint32_t n, uint32_t at, std::vector<uint32_t>& w, LevelOf level_of) {
  for (uint32_t p = 0; p < n; ++p) {
    uint32_t code = 0;
    for (uint32_t j = 0; j < 8; ++j) code |= level_of(static_cast<uint8_t>(grid[p] >> (8 * j))) << (2 * j);
    w[at + p / 2] |= code << (16 * (p & 1));
  }
}

uint32_t iq2_level(uint8_t b) {
  VKS_ASSERT(b == 8 || b == 25 || b == 43, "iq2 grid byte outside 8/25/43");
  return b == 8 ? 0 : b == 25 ? 1 : 2;
}
uint32_t iq1_level(uint8_t b) {
  VKS_ASSERT(b == 0xff || b == 0 || b == 1, "iq1s grid byte outside -1/0/1");
  return b == 0xff ? 0 : b == 0 ? 1 : 2;
}

}  // namespace

std::vector<uint32_t> shader_grid_words() {
  namespace o = shader_words;
  std::vector<uint32_t> w(o::total, 0);
  pack_points(iq2xxs_grid, 256, o::iq2xxs, w, iq2_level);
  pack_points(iq2xs_grid, 512, o::iq2xs, w, iq2_level);
  pack_points(iq2s_grid, 1024, o::iq2s, w, iq2_level);
  for (uint32_t p = 0; p < 256; ++p) w[o::iq3xxs + p] = iq3xxs_grid[p];
  for (uint32_t p = 0; p < 512; ++p) w[o::iq3s + p] = iq3s_grid[p];
  pack_points(iq1s_grid, 2048, o::iq1s, w, iq1_level);
  return w;
}

}  // namespace vks::gpu::iq
