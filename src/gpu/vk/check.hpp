// VkResult -> vks::error mapping for gpu/vk. Private to gpu/vk.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "base/result.hpp"

namespace vks::gpu::vk {

inline errc errc_of(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_OUT_OF_POOL_MEMORY: return errc::out_of_memory;
    case VK_ERROR_DEVICE_LOST: return errc::device_lost;
    case VK_TIMEOUT: return errc::timeout;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT: return errc::unsupported;
    default: return errc::internal;
  }
}

inline unexpected vk_fail(VkResult r, const std::string& what) {
  return fail(errc_of(r), "vulkan: " + what + " failed (VkResult " + std::to_string(static_cast<int>(r)) + ")");
}

}  // namespace vks::gpu::vk

// Return a vks error from the enclosing function when a Vulkan call fails.
#define VKS_VK_TRY(call, what)                                  \
  do {                                                          \
    VkResult vks_vk_r_ = (call);                                \
    if (vks_vk_r_ != VK_SUCCESS) return ::vks::gpu::vk::vk_fail(vks_vk_r_, (what)); \
  } while (0)
