// sd_notify(3) datagrams over AF_UNIX/SOCK_DGRAM, and the $WATCHDOG_USEC/$WATCHDOG_PID rule.
#include "server/sd_notify.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace vks::server {
namespace {

std::optional<std::chrono::microseconds> watchdog_from_env() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (!usec || !*usec) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(usec, &end, 10);
  if (*end != '\0' || v == 0) return std::nullopt;
  if (const char* pid = std::getenv("WATCHDOG_PID"); pid && *pid) {
    if (std::strtoll(pid, nullptr, 10) != static_cast<long long>(::getpid())) return std::nullopt;
  }
  return std::chrono::microseconds(static_cast<long long>(v));
}

}  // namespace

sd_notifier sd_notifier::from_env() {
  const char* s = std::getenv("NOTIFY_SOCKET");
  return sd_notifier(s ? s : "", watchdog_from_env());
}

result<void> sd_notifier::send(std::string_view state) const {
  if (socket_.empty()) return ok();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_.size() >= sizeof addr.sun_path || (socket_[0] != '/' && socket_[0] != '@'))
    return fail(errc::invalid_argument, "NOTIFY_SOCKET is not a socket path: " + socket_);
  std::memcpy(addr.sun_path, socket_.data(), socket_.size());
  if (socket_[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_.size());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(errc::io, std::string("sd_notify: socket: ") + std::strerror(errno));
  const ssize_t n = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  const int err = errno;
  ::close(fd);
  if (n < 0) return fail(errc::io, "sd_notify to " + socket_ + ": " + std::strerror(err));
  return ok();
}

const sd_notifier& process_notifier() {
  static const sd_notifier n = sd_notifier::from_env();
  return n;
}

}  // namespace vks::server
