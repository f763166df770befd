// Entry point of the Vulkan kernel tests: exits 77 (skipped) when no Vulkan device exists,
// otherwise runs the Catch2 session with one shared backend (pipelines compile once).
#define CATCH_CONFIG_RUNNER
#include <cstdio>
#include <cstdlib>

#include "base/log.hpp"
#include "vk_fixture.hpp"

namespace vks::gpu::test {
backend* g_vk = nullptr;
}

int main(int argc, char** argv) {
  vks::log::init("warn");
  vks::gpu::vk_options o;
  o.validation = std::getenv("VKS_VK_VALIDATION") != nullptr;
  // VKS_VK_TUNING=cpu|cpu:loads|gpu|gpu:N runs the kernels of another device class on this one.
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;
  auto b = vks::gpu::make_vk_backend(o);
  if (!b) {
    std::printf("SKIP: no Vulkan device: %s\n", b.error().message.c_str());
    return 77;
  }
  std::printf("vulkan device: %s (%s), subgroup %u, tuning '%s'\n", (*b)->info().name.c_str(),
              (*b)->info().kind.c_str(), (*b)->info().subgroup_size, o.tuning.c_str());
  vks::gpu::test::g_vk = b->get();
  return Catch::Session().run(argc, argv);
}
