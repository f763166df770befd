// log_throttle: at most one message per interval from one call site on one thread, so that a
// flood of refused requests does not flood the log as well. Use as
//   thread_local log_throttle t{std::chrono::seconds(10)};  if (t.allow()) log::warn(...);
// Not shared between threads (one per thread by construction).
#pragma once

#include <chrono>

namespace vks {

class log_throttle {
 public:
  using clock = std::chrono::steady_clock;
  explicit constexpr log_throttle(clock::duration interval) noexcept : interval_(interval) {}

  // True (and the interval starts again) when the last allowed message is older than it.
  bool allow(clock::time_point now = clock::now()) noexcept {
    if (now - last_ <= interval_) return false;
    last_ = now;
    return true;
  }

 private:
  clock::duration interval_;
  clock::time_point last_{};
};

}  // namespace vks
