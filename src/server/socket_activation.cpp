// $LISTEN_FDS / $LISTEN_PID, and execv("/proc/self/exe") with the listener as fd 3.
#include "server/socket_activation.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace vks::server {
namespace {

constexpr int k_listen_fds_start = 3;  // SD_LISTEN_FDS_START
std::vector<char*> g_argv;

result<void> sys_fail(const char* what) { return fail(errc::io, std::string(what) + ": " + std::strerror(errno)); }

}  // namespace

void remember_argv(int argc, char** argv) { g_argv.assign(argv, argv + argc); }

result<std::optional<int>> take_activated_socket() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds) return std::optional<int>();
  const bool ours = std::strtoll(pid, nullptr, 10) == static_cast<long long>(::getpid());
  const long n = std::strtol(fds, nullptr, 10);
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  if (!ours || n < 1) return std::optional<int>();
  const int fd = k_listen_fds_start;
  int type = 0, accepting = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
    return fail(errc::invalid_argument, "LISTEN_FDS: fd 3 is not a stream socket");
  len = sizeof accepting;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) < 0 || !accepting)
    return fail(errc::invalid_argument, "LISTEN_FDS: fd 3 is not listening");
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return fail(sys_fail("fcntl(F_SETFL)").error());
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) return fail(sys_fail("fcntl(F_SETFD)").error());
  return std::optional<int>(fd);
}

result<void> reexec_with_socket(int listen_fd) {
  if (g_argv.empty()) return fail(errc::internal, "re-exec: argv was not remembered");
  if (listen_fd != k_listen_fds_start) {
    if (::dup2(listen_fd, k_listen_fds_start) < 0) return sys_fail("dup2");  // dup2 clears FD_CLOEXEC
  } else if (::fcntl(listen_fd, F_SETFD, 0) < 0) {
    return sys_fail("fcntl(F_SETFD)");
  }
  ::setenv("LISTEN_FDS", "1", 1);
  ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  std::vector<char*> args = g_argv;
  args.push_back(nullptr);
  ::execv("/proc/self/exe", args.data());
  return sys_fail("execv /proc/self/exe");
}

}  // namespace vks::server
