// Compute pipelines from the embedded SPIR-V and the descriptor sets that bind buffers to them.
// Every kernel uses one layout: 8 storage-buffer bindings (unused ones bound to a dummy, 7 to
// the i-quant grids) and a 128-byte push-constant range, so one pipeline layout serves all. Pipelines are created on
// first use (once per kernel + specialization) through a VkPipelineCache and found again by
// indexing an array by kernel (then the few specializations of that kernel). Descriptor sets are
// cached per binding tuple; when the pool is full, reset_sets() frees them all (callers must
// drop command buffers that used them). Not thread-safe (engine thread).
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gpu/vk/context.hpp"
#include "gpu/vk/spirv_registry.hpp"

namespace vks::gpu::vk {

inline constexpr uint32_t k_storage_bindings = 8;  // bindings 0-7: storage buffers
// Bound to the i-quant grids (gpu/iq_grids.hpp) wherever a dispatch leaves it free; the
// weight-decoding kernels (common/dequant.glsl) read them there.
inline constexpr uint32_t k_iq_grid_binding = 7;
inline constexpr uint32_t k_bindings = 11;         // bindings 8-10: uniform texel buffers
// Formats of the texel bindings 8, 9, 10: 16-byte words (weights, K cache), vec4 (activations),
// 16-byte words (V cache). Each is a view of the bound buffer window.
inline constexpr VkFormat k_texel_formats[k_bindings - k_storage_bindings] = {
    VK_FORMAT_R32G32B32A32_UINT, VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R32G32B32A32_UINT};
inline constexpr uint32_t k_push_bytes = 128;

struct binding {
  VkBuffer buf = VK_NULL_HANDLE;
  uint64_t offset = 0, range = 0;
  auto operator<=>(const binding&) const = default;
};
using binding_set = std::array<binding, k_bindings>;

// Specialization constants: id 0 = workgroup size x, id 1 = lanes per row (matmul),
// id 2 = rows per invocation (matmul without lane reduction), id 3 = x shared by subgroup
// broadcast (bool; q8_0 matmul without lane reduction, see matmul.comp), id 4 = tokens per
// invocation of matmul without lane reduction (0: the shader's default). sg_size (not a
// constant): the subgroup size the pipeline requires (VK_EXT_subgroup_size_control, with full
// subgroups; wg must be a multiple of it), 0 for the driver's choice; only where
// device_caps::size_control allows that size.
struct spec {
  uint32_t wg = 64, lanes = 1, rows = 1, xb = 0, tb = 0, sg_size = 0;
  auto operator<=>(const spec&) const = default;
};

class pipelines {
 public:
  explicit pipelines(const context& ctx) : ctx_(ctx) {}
  ~pipelines();
  pipelines(const pipelines&) = delete;
  pipelines& operator=(const pipelines&) = delete;
  // cache_file: where the pipeline cache persists across runs ("" = in memory only). It is
  // read if present and made for this device (a file from another device, driver or a
  // corrupt one is ignored with a warning), and written (atomically: temp file + rename)
  // by the destructor when new pipelines were created.
  result<void> init(const std::string& cache_file = {});

  // Index of the pipeline for kernel `k` with specialization `s`.
  result<uint32_t> get(kernel k, spec s);
  VkPipeline pipeline(uint32_t id) const { return list_[id].pipe; }
  std::string_view name(uint32_t id) const { return spirv_of(list_[id].k).name; }
  VkPipelineLayout layout() const { return playout_; }

  // A descriptor set binding `b`; VK_NULL_HANDLE when the pool is exhausted.
  VkDescriptorSet set_for(const binding_set& b);
  void reset_sets();

 private:
  VkBufferView view_for(const binding& b, VkFormat f);

  struct entry {
    kernel k;
    spec sp;
    VkPipeline pipe = VK_NULL_HANDLE;
  };
  const context& ctx_;
  VkDescriptorSetLayout dsl_ = VK_NULL_HANDLE;
  VkPipelineLayout playout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::string cache_file_;
  bool cache_dirty_ = false;
  void save_cache();
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  std::vector<entry> list_;
  std::array<std::vector<uint32_t>, k_n_kernels> by_kernel_;  // indices into list_
  std::map<binding_set, VkDescriptorSet> sets_;
  std::map<std::pair<binding, VkFormat>, VkBufferView> views_;
};

}  // namespace vks::gpu::vk
