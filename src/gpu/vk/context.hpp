// Vulkan instance, physical-device selection and the logical device with one compute queue.
// Selection: discrete > integrated > virtual > cpu (lavapipe), or vk_options.device as an
// index or a case-insensitive name substring. Owns the VkInstance/VkDevice (move-only,
// destroyed in the destructor). Used from the engine thread only.
#pragma once

#include <vulkan/vulkan.h>

#include <memory>
#include <span>
#include <string>

#include "base/result.hpp"
#include "gpu/backend.hpp"

namespace vks::gpu::vk {

struct device_caps {
  std::string name, kind;
  uint32_t vendor_id = 0, device_id = 0;  // VkPhysicalDeviceProperties (tuning table, gpu/vk/tuning.hpp)
  uint32_t subgroup_size = 0;
  bool subgroup_ballot = false;        // subgroupBroadcast in compute shaders
  bool subgroup_arith = false;         // subgroupAdd etc. in compute shaders (SUBGROUP_FEATURE_ARITHMETIC)
  // Features enabled at device creation where offered (each false otherwise, and every kernel
  // that could use one has a fallback that does not): see context::create_device.
  bool storage16 = false;              // storageBuffer16BitAccess (16-bit loads from storage buffers)
  bool float16 = false;                // shaderFloat16 (fp16 arithmetic)
  bool storage8 = false;               // storageBuffer8BitAccess
  bool int8 = false;                   // shaderInt8
  bool integer_dot = false;            // shaderIntegerDotProduct (VK_KHR_shader_integer_dot_product)
  bool integer_dot_fast = false;       // ... and 4x8-bit packed signed dot products are accelerated
  // Subgroup size control (VK_EXT_subgroup_size_control with computeFullSubgroups and compute
  // in requiredSubgroupSizeStages): a pipeline may require any power of two in
  // [min_subgroup, max_subgroup] (pipelines.cpp, spec::sg_size).
  bool size_control = false;
  uint32_t min_subgroup = 0, max_subgroup = 0;
  uint64_t max_storage_range = 0;      // maxStorageBufferRange
  uint64_t max_alloc = 0;              // maxMemoryAllocationSize
  uint64_t min_storage_align = 16;     // minStorageBufferOffsetAlignment
  uint64_t max_texel_elements = 0;     // maxTexelBufferElements
  uint64_t min_texel_align = 16;       // minTexelBufferOffsetAlignment
  bool texel_views = false;            // uniform texel buffers of RGBA32UI and RGBA32F
  uint32_t shared_memory = 0;          // maxComputeSharedMemorySize
  uint32_t max_wg_invocations = 0;
  uint32_t max_wg_count[3] = {65535, 65535, 65535};  // maxComputeWorkGroupCount
  uint64_t device_local_bytes = 0;     // largest device-local heap
  bool timestamps = false;
  float timestamp_period_ns = 1.f;
};

// The optional features of c that are enabled, space-separated ("none"), for the device log line.
std::string feature_list(const device_caps& c);

// What device selection looks at (one entry per vkEnumeratePhysicalDevices result).
struct device_candidate {
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0;
};
// Index into devs of the device to use, or -1. `want` empty: the best type (discrete >
// integrated > virtual > cpu > other; the first on ties); all digits: that index; else the
// best device whose name contains `want` (case-insensitive). Devices below Vulkan 1.2 never
// qualify. Pure: unit-tested without a device.
int select_device(std::span<const device_candidate> devs, const std::string& want);

class context {
 public:
  static result<std::unique_ptr<context>> create(const vk_options& opts);
  ~context();
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  VkDevice device() const { return dev_; }
  VkPhysicalDevice physical() const { return phys_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return qfam_; }
  const device_caps& caps() const { return caps_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memprops_; }

 private:
  context() = default;
  result<void> pick_device(const vk_options& opts);
  result<void> create_device();
  void query_features();

  VkInstance inst_ = VK_NULL_HANDLE;
  VkPhysicalDevice phys_ = VK_NULL_HANDLE;
  VkDevice dev_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t qfam_ = 0;
  device_caps caps_;
  bool ext_size_control_ = false, ext_integer_dot_ = false;  // device extensions offered (pick_device)
  VkPhysicalDeviceMemoryProperties memprops_{};
};

}  // namespace vks::gpu::vk
