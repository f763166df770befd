// Embedded SPIR-V modules (generated at build time from shaders/meson.build's table).
// Lookup is by variant name, e.g. "add_f32". Private to gpu/vk.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace vks::gpu::vk {

struct spirv_module {
  std::string_view name;
  std::span<const uint32_t> words;
};

// All modules, sorted by name.
std::span<const spirv_module> spirv_modules();

// The module called `name`, or an empty span if there is none.
inline std::span<const uint32_t> find_spirv(std::string_view name) {
  for (const auto& m : spirv_modules())
    if (m.name == name) return m.words;
  return {};
}

}  // namespace vks::gpu::vk
