// Embedded SPIR-V modules (generated at build time from shaders/meson.build's table), named
// by `enum class kernel` (generated spirv_kernels.hpp, one enumerator per table row, e.g.
// kernel::add_f32). A dispatch names its kernel by enumerator; names are resolved to
// enumerators only at init (kernel_named). Private to gpu/vk.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "spirv_kernels.hpp"

namespace vks::gpu::vk {

struct spirv_module {
  std::string_view name;
  std::span<const uint32_t> words;
};

// All modules, sorted by name; index i is the module of kernel(i).
std::span<const spirv_module> spirv_modules();

inline const spirv_module& spirv_of(kernel k) { return spirv_modules()[static_cast<uint32_t>(k)]; }

// The kernel called `name`, or nullopt if there is none (init time only: a linear scan).
inline std::optional<kernel> kernel_named(std::string_view name) {
  const auto all = spirv_modules();
  for (uint32_t i = 0; i < all.size(); ++i)
    if (all[i].name == name) return static_cast<kernel>(i);
  return std::nullopt;
}

}  // namespace vks::gpu::vk
