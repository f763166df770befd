// Socket setup helpers: listening sockets (v4/v6 literals), ports, socket options.
#include "rt/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "rt/detail/backend.hpp"

namespace vks::rt {
namespace {

result<void> sockopt(int fd, int level, int name, int value, const char* what) {
  if (::setsockopt(fd, level, name, &value, sizeof value) < 0)
    return fail(errc::io, detail::errno_text(what, errno));
  return ok();
}

// Fills ss from a literal host; returns the address length or 0 when not a literal.
socklen_t make_addr(const std::string& host_in, std::uint16_t port, sockaddr_storage& ss) {
  std::string host = host_in.empty() ? "0.0.0.0" : host_in == "localhost" ? "127.0.0.1" : host_in;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    return sizeof *v4;
  }
  if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return sizeof *v6;
  }
  return 0;
}

}  // namespace

result<int> listen_tcp(const std::string& host, std::uint16_t port, bool reuse_port, int backlog) {
  if (backlog <= 0) return fail(errc::invalid_argument, "listen backlog must be positive");
  sockaddr_storage ss{};
  socklen_t len = make_addr(host, port, ss);
  if (len == 0) return fail(errc::invalid_argument, "listen: not an IP address literal: '" + host + "'", "host");
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(errc::io, detail::errno_text("socket", errno));
  auto setup = [&]() -> result<void> {
    VKS_TRY(sockopt(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR"));
    if (reuse_port) VKS_TRY(sockopt(fd, SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT"));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) < 0)
      return fail(errc::io, detail::errno_text(("bind " + host + ":" + std::to_string(port)).c_str(), errno));
    if (::listen(fd, backlog) < 0) return fail(errc::io, detail::errno_text("listen", errno));
    return ok();
  };
  if (auto r = setup(); !r) {
    ::close(fd);
    return fail(std::move(r).error());
  }
  return fd;
}

result<std::uint16_t> bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0)
    return fail(errc::io, detail::errno_text("getsockname", errno));
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return fail(errc::invalid_argument, "bound_port: not an IP socket");
}

result<void> set_nodelay(int fd, bool on) {
  return sockopt(fd, IPPROTO_TCP, TCP_NODELAY, on ? 1 : 0, "TCP_NODELAY");
}

result<void> set_buffer_sizes(int fd, int sndbuf, int rcvbuf) {
  if (sndbuf > 0) VKS_TRY(sockopt(fd, SOL_SOCKET, SO_SNDBUF, sndbuf, "SO_SNDBUF"));
  if (rcvbuf > 0) VKS_TRY(sockopt(fd, SOL_SOCKET, SO_RCVBUF, rcvbuf, "SO_RCVBUF"));
  return ok();
}

result<void> socket_pair(int fds[2]) {
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) < 0)
    return fail(errc::io, detail::errno_text("socketpair", errno));
  return ok();
}

}  // namespace vks::rt
