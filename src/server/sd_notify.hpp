// systemd's service notification protocol (sd_notify(3)), spoken directly so it works in
// every build and can be tested against a fake socket: datagrams such as "READY=1" to the
// unix socket named by $NOTIFY_SOCKET (a path, or "@name" in the abstract namespace); the
// watchdog interval from $WATCHDOG_USEC (for this process when $WATCHDOG_PID is unset or
// names it). Thread-safety: immutable after from_env(); send() may run on any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace vks::server {

class sd_notifier {
 public:
  // Reads the environment once; the variables are left set (a re-exec keeps them).
  static sd_notifier from_env();
  // For tests: an explicit socket ("" = disabled) and watchdog interval.
  sd_notifier(std::string socket, std::optional<std::chrono::microseconds> watchdog)
      : socket_(std::move(socket)), watchdog_(watchdog) {}

  // Whether a supervisor listens ($NOTIFY_SOCKET set): systemd, or a test.
  bool enabled() const noexcept { return !socket_.empty(); }
  // The interval within which WATCHDOG=1 must arrive; nullopt when no watchdog is asked.
  std::optional<std::chrono::microseconds> watchdog() const noexcept { return watchdog_; }
  // Sends one datagram ("KEY=VALUE" lines). ok() and nothing sent when disabled.
  result<void> send(std::string_view state) const;

 private:
  std::string socket_;
  std::optional<std::chrono::microseconds> watchdog_;
};

// The process's notifier (from_env() on first use).
const sd_notifier& process_notifier();

}  // namespace vks::server
