// gpu/vk: the windows a paged KV cache tensor is bound in when its buffer exceeds one storage
// binding (maxStorageBufferRange). A window holds whole granules of cache rows (a block of B
// rows for attention, one row for kv_store), so a kernel addresses a row as (window, row in
// window); kv_store and attention_flash run one dispatch per window (vk_backend).
#pragma once

#include <algorithm>
#include <cstdint>

namespace vks::gpu::vk {

struct kv_windows {
  uint64_t rows_per_window = 0;  // cache rows (slots) of each window but the last; a multiple of the granule
  uint32_t n = 0;                // windows; 0: one granule alone exceeds the room
};

// rows: the tensor's cache rows; row_bytes: bytes per row; granule: rows a window never
// splits (>= 1); room: bytes one binding may span after alignment slack.
inline kv_windows kv_windows_of(uint64_t rows, uint64_t row_bytes, uint64_t granule, uint64_t room) {
  kv_windows w;
  if (row_bytes == 0 || granule == 0) return w;
  const uint64_t granules = room / (row_bytes * granule);
  if (granules == 0) return w;
  w.rows_per_window = granules * granule;
  w.n = static_cast<uint32_t>(std::max<uint64_t>(1, (rows + w.rows_per_window - 1) / w.rows_per_window));
  return w;
}

}  // namespace vks::gpu::vk
