// The armed-fault flags behind gpu/fault.hpp.
#include "gpu/fault.hpp"

#include <atomic>
#include <thread>

namespace vks::gpu::fault {
namespace {

std::atomic<bool> g_lost{false};
std::atomic<long long> g_hang_ms{0};

}  // namespace

void arm_device_lost() noexcept { g_lost.store(true); }

void arm_hang(std::chrono::milliseconds d) noexcept { g_hang_ms.store(d.count()); }

result<void> before_submit() {
  if (g_hang_ms.load(std::memory_order_relaxed) > 0) {
    if (const long long ms = g_hang_ms.exchange(0); ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  if (g_lost.load(std::memory_order_relaxed) && g_lost.exchange(false))
    return fail(errc::device_lost, "VK_ERROR_DEVICE_LOST (injected by the test hook)");
  return ok();
}

}  // namespace vks::gpu::fault
