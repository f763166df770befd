// Fault injection for tests of the serving layer's fault handling (device loss, a hung
// step). A test hook, not a feature: production never arms it. Armed faults are
// process-wide and one-shot: the next backend submit (any backend) takes them.
// Thread-safety: every function may be called from any thread (atomics).
#pragma once

#include <chrono>

#include "base/result.hpp"

namespace vks::gpu::fault {

// The next submit returns errc::device_lost (as VK_ERROR_DEVICE_LOST would), and the
// backend that took it stays lost: every later submit fails the same way.
void arm_device_lost() noexcept;
// The next submit first blocks for `d` (a GPU that stopped answering), then runs.
void arm_hang(std::chrono::milliseconds d) noexcept;

// Called by each backend's submit() before it runs anything: sleeps for an armed hang,
// and returns device_lost once for an armed loss. ok() when nothing is armed (one
// relaxed load each).
result<void> before_submit();

}  // namespace vks::gpu::fault
