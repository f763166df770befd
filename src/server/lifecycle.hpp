// Process lifecycle of `vkserve serve`: SIGINT/SIGTERM turned into a stop request that the
// main thread waits for, and systemd notifications (READY=1, STOPPING=1, STATUS=...;
// server/sd_notify.hpp) when $NOTIFY_SOCKET is set (no-ops otherwise).
// Test hook: with VKSERVE_TEST_FAULTS=1 in the environment, SIGUSR1 arms a device loss and
// SIGUSR2 a hang of $VKSERVE_TEST_HANG_MS (default 3000) ms at the next GPU submit
// (gpu/fault.hpp); without it those signals keep their default action.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string_view>
#include <thread>

namespace vks::server {

// Blocks SIGINT/SIGTERM in the calling thread (call before starting any thread, so every
// thread inherits the mask) and ignores SIGPIPE; a watcher thread takes the signals.
// Destroying it stops the watcher. One per process.
class signal_watch {
 public:
  signal_watch();
  ~signal_watch();
  signal_watch(const signal_watch&) = delete;
  signal_watch& operator=(const signal_watch&) = delete;

  // True once a stop was requested (a signal, or request_stop()).
  bool stop_requested() const noexcept { return stop_.load(); }
  void request_stop();
  // Waits until stop_requested() (or the timeout passes); returns stop_requested().
  bool wait_for(std::chrono::milliseconds timeout);
  int signal_number() const noexcept { return signo_.load(); }  // 0 if none

 private:
  void run();
  bool test_faults_ = false;  // VKSERVE_TEST_FAULTS=1: SIGUSR1/SIGUSR2 arm gpu faults
  std::atomic<bool> stop_{false};
  std::atomic<bool> quit_{false};
  std::atomic<int> signo_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

// Sends `state` to systemd (process_notifier()); nothing when $NOTIFY_SOCKET is unset.
void notify_systemd(std::string_view state);

}  // namespace vks::server
