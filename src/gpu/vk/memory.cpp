// raw_buffer creation (memory-type choice, mapping) and the block sub-allocator.
#include "gpu/vk/memory.hpp"

#include <algorithm>
#include <string>

#include "base/log.hpp"
#include "gpu/vk/check.hpp"

namespace vks::gpu::vk {
namespace {

int find_type(const VkPhysicalDeviceMemoryProperties& mp, uint32_t bits, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return static_cast<int>(i);
  return -1;
}

}  // namespace

result<raw_buffer> raw_buffer::create(const context& ctx, uint64_t size, bool host_visible) {
  raw_buffer b;
  b.dev_ = ctx.device();
  b.size_ = size;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (ctx.caps().texel_views) bci.usage |= VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;  // texel matmul (vk_backend)
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VKS_VK_TRY(vkCreateBuffer(b.dev_, &bci, nullptr, &b.buf_), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(b.dev_, b.buf_, &req);
  const auto& mp = ctx.memory_properties();
  const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int type = -1;
  if (host_visible) {
    type = find_type(mp, req.memoryTypeBits, hv | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (type < 0) type = find_type(mp, req.memoryTypeBits, hv);
  } else {
    // CPU and integrated devices: device-local memory that the host can map directly.
    if (ctx.caps().kind == "cpu" || ctx.caps().kind == "integrated")
      type = find_type(mp, req.memoryTypeBits, hv | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type < 0) type = find_type(mp, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  }
  if (type < 0) return fail(errc::unsupported, "vulkan: no suitable memory type");
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  VkResult r = vkAllocateMemory(b.dev_, &mai, nullptr, &b.mem_);
  if (r != VK_SUCCESS)
    return fail(errc::out_of_memory, "vulkan: cannot allocate " + std::to_string(size >> 20) + " MiB of " +
                                         (host_visible ? "host-visible" : "device") + " memory");
  VKS_VK_TRY(vkBindBufferMemory(b.dev_, b.buf_, b.mem_, 0), "vkBindBufferMemory");
  if (mp.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
    void* p = nullptr;
    VKS_VK_TRY(vkMapMemory(b.dev_, b.mem_, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
    b.map_ = static_cast<std::byte*>(p);
    if (!(mp.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) {
      vkUnmapMemory(b.dev_, b.mem_);  // non-coherent: use staging instead
      b.map_ = nullptr;
    }
  }
  return b;
}

raw_buffer& raw_buffer::operator=(raw_buffer&& o) noexcept {
  if (this != &o) {
    reset();
    dev_ = std::exchange(o.dev_, VK_NULL_HANDLE);
    buf_ = std::exchange(o.buf_, VK_NULL_HANDLE);
    mem_ = std::exchange(o.mem_, VK_NULL_HANDLE);
    size_ = std::exchange(o.size_, 0);
    map_ = std::exchange(o.map_, nullptr);
  }
  return *this;
}

raw_buffer::~raw_buffer() { reset(); }

void raw_buffer::reset() {
  if (buf_) vkDestroyBuffer(dev_, buf_, nullptr);
  if (mem_) vkFreeMemory(dev_, mem_, nullptr);  // implicitly unmaps
  buf_ = VK_NULL_HANDLE;
  mem_ = VK_NULL_HANDLE;
  map_ = nullptr;
}

allocator::allocator(const context& ctx) : ctx_(ctx) {
  const auto& c = ctx.caps();
  block_size_ = std::min<uint64_t>({c.max_storage_range, c.max_alloc, uint64_t{256} << 20});
  block_size_ &= ~uint64_t{0xffff};
}

result<uint32_t> allocator::alloc(uint64_t bytes, std::string_view name) {
  const uint64_t align = std::max<uint64_t>(ctx_.caps().min_storage_align, 256);
  const uint64_t need = (bytes + k_alloc_pad + align - 1) / align * align;
  allocation a;
  a.size = bytes;
  if (need > block_size_) {  // dedicated buffer, bound in windows by the kernels
    if (need > ctx_.caps().max_alloc)
      return fail(errc::out_of_memory, "vulkan: tensor '" + std::string(name) + "' (" + std::to_string(bytes >> 20) +
                                           " MiB) exceeds maxMemoryAllocationSize (" +
                                           std::to_string(ctx_.caps().max_alloc >> 20) + " MiB)");
    auto rb = raw_buffer::create(ctx_, need, false);
    if (!rb) return fail(rb.error().code, rb.error().message + " for tensor '" + std::string(name) + "'");
    blocks_.push_back(std::move(*rb));
    block_used_.push_back(need);
  } else {
    size_t bi = blocks_.size();
    for (size_t i = 0; i < blocks_.size(); ++i)
      if (blocks_[i].size() == block_size_ && block_used_[i] + need <= block_size_) { bi = i; break; }
    if (bi == blocks_.size()) {
      auto rb = raw_buffer::create(ctx_, block_size_, false);
      if (!rb) return fail(rb.error().code, rb.error().message + " for tensor '" + std::string(name) + "'");
      blocks_.push_back(std::move(*rb));
      block_used_.push_back(0);
    }
    a.base = block_used_[bi];
    block_used_[bi] += need;
    a.buf = blocks_[bi].handle();
    a.buf_size = blocks_[bi].size();
    a.mapped = blocks_[bi].mapped();
    used_ += need;
    allocs_.push_back(a);
    return static_cast<uint32_t>(allocs_.size() - 1);
  }
  a.buf = blocks_.back().handle();
  a.buf_size = blocks_.back().size();
  a.mapped = blocks_.back().mapped();
  used_ += need;
  allocs_.push_back(a);
  return static_cast<uint32_t>(allocs_.size() - 1);
}

const allocation& allocator::at(uint32_t id) const {
  VKS_ASSERT(id < allocs_.size(), "unknown buffer id");
  return allocs_[id];
}

}  // namespace vks::gpu::vk
