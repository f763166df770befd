// Device memory for gpu/vk: RAII raw buffers (one VkBuffer bound to its own VkDeviceMemory)
// and the tensor allocator that sub-allocates from large device-local blocks.
// Blocks are at most min(maxStorageBufferRange, maxMemoryAllocationSize, 256 MiB) so a whole
// block can be bound as one storage buffer; a bigger tensor gets a dedicated buffer (up to
// maxMemoryAllocationSize) that kernels bind in windows. Every allocation is padded by
// k_alloc_pad bytes (kernels read one word ahead). Bump allocation; memory is released
// when the allocator is destroyed. Not thread-safe (engine thread).
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gpu/vk/context.hpp"

namespace vks::gpu::vk {

inline constexpr uint64_t k_alloc_pad = 16;

class raw_buffer {
 public:
  raw_buffer() = default;
  // host_visible: HOST_VISIBLE|HOST_COHERENT memory, persistently mapped. Otherwise
  // DEVICE_LOCAL, mapped too when the device-local type is host-visible (CPU/UMA devices).
  static result<raw_buffer> create(const context& ctx, uint64_t size, bool host_visible);
  ~raw_buffer();
  raw_buffer(raw_buffer&& o) noexcept { *this = std::move(o); }
  raw_buffer& operator=(raw_buffer&& o) noexcept;
  raw_buffer(const raw_buffer&) = delete;
  raw_buffer& operator=(const raw_buffer&) = delete;

  VkBuffer handle() const { return buf_; }
  uint64_t size() const { return size_; }
  std::byte* mapped() const { return map_; }  // nullptr when not host-visible

 private:
  void reset();
  VkDevice dev_ = VK_NULL_HANDLE;
  VkBuffer buf_ = VK_NULL_HANDLE;
  VkDeviceMemory mem_ = VK_NULL_HANDLE;
  uint64_t size_ = 0;
  std::byte* map_ = nullptr;
};

// Where an allocation lives.
struct allocation {
  VkBuffer buf = VK_NULL_HANDLE;
  uint64_t base = 0;        // byte offset of the allocation within buf
  uint64_t size = 0;        // requested bytes (without padding)
  uint64_t buf_size = 0;    // size of buf (whole-buffer binding when <= maxStorageBufferRange)
  std::byte* mapped = nullptr;  // host pointer to buf's start, or nullptr
};

class allocator {
 public:
  explicit allocator(const context& ctx);
  result<uint32_t> alloc(uint64_t bytes, std::string_view name);
  const allocation& at(uint32_t id) const;
  bool has(uint32_t id) const { return id < allocs_.size(); }
  uint64_t used_bytes() const { return used_; }

 private:
  const context& ctx_;
  uint64_t block_size_ = 0;
  std::vector<raw_buffer> blocks_;
  std::vector<uint64_t> block_used_;
  std::vector<allocation> allocs_;
  uint64_t used_ = 0;
};

}  // namespace vks::gpu::vk
