// The workgroup shape of attention_flash.comp (#20, #22): query rows per workgroup, keys per
// K/V tile, query heads and tokens per workgroup, and the shared memory that shape costs.
// Pure (no device), so the shapes and their costs at every head dim are unit-tested
// (tests/gpu/test_flash_shape.cpp); vk_backend::attention_flash dispatches what it returns.
#pragma once

#include <algorithm>
#include <cstdint>

namespace vks::gpu::vk {

struct flash_shape {
  uint32_t rows = 0;  // R = gc * nq query rows per workgroup (R * D <= 1024); 0: the kernel does not fit
  uint32_t keys = 0;  // BK: keys per K/V tile (spec constant 4): 16, 8 above D = 256, fewer if shared memory is short
  uint32_t gc = 1;    // query heads of one KV head per workgroup: the largest divisor of G up to rows
  uint32_t nq = 1;    // tokens per workgroup: 1 for decode (T <= 8), else rows / gc
  uint64_t shared_bytes = 0;  // the kernel's shared arrays at rows x keys (flash_shared_bytes)
};

// attention_flash.comp's shared memory in bytes at r query rows, bk-key tiles and head dim d:
// q and the accumulators (2 r d floats), one K/V tile (bk (d + 1)), scores (r bk), per-row
// max / sum / rescale / sequence / key range (6 r), the tile's cache rows (bk) and the score
// partials (256).
constexpr uint64_t flash_shared_bytes(uint64_t r, uint64_t bk, uint64_t d) {
  return 4 * (2 * r * d + bk * (d + 1) + r * bk + 6 * r + bk + 256);
}

// The shape for head dim d (1..1024), GQA group g (H / Hkv), t tokens in the step, on a device
// with `shared` bytes of compute shared memory. Tiles of 8 keys above D = 256 keep D = 512 at
// 25.2 KiB (within the 32 KiB of every current GPU); where even that does not fit, the tile
// then the rows halve (down to 4 keys, 1 row); rows == 0 if nothing fits.
inline flash_shape pick_flash_shape(uint32_t d, uint32_t g, uint32_t t, uint64_t shared) {
  flash_shape s;
  if (d == 0 || d > 1024 || g == 0) return s;
  s.rows = std::min<uint32_t>(16, 1024 / d);
  s.keys = d > 256 ? 8 : 16;
  while (flash_shared_bytes(s.rows, s.keys, d) > shared && (s.keys > 4 || s.rows > 1)) {
    if (s.keys > 4) s.keys /= 2;
    else s.rows /= 2;
  }
  s.shared_bytes = flash_shared_bytes(s.rows, s.keys, d);
  if (s.shared_bytes > shared) return flash_shape{};
  for (uint32_t c = std::min(g, s.rows); c > 1; --c)
    if (g % c == 0) {
      s.gc = c;
      break;
    }
  s.nq = t <= 8 ? 1 : s.rows / s.gc;
  return s;
}

}  // namespace vks::gpu::vk
