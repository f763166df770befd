// Plain (synchronous, non-coroutine) socket setup helpers: listening sockets, socket
// options, addresses. Thread-safe (they only touch the fds they are given).
#pragma once

#include <cstdint>
#include <string>

#include "base/result.hpp"

namespace vks::rt {

// Creates a non-blocking, CLOEXEC TCP listening socket bound to a literal IPv4/IPv6 host
// ("0.0.0.0", "127.0.0.1", "::", "::1"; "localhost" means 127.0.0.1; "" means "0.0.0.0").
// SO_REUSEADDR always; SO_REUSEPORT when reuse_port (one socket per I/O thread).
// port 0 picks an ephemeral port: learn it with bound_port(). Returns the fd (caller owns).
// Errors: errc::invalid_argument (bad host, backlog <= 0), errc::io (bind: EADDRINUSE ...).
result<int> listen_tcp(const std::string& host, std::uint16_t port, bool reuse_port = false,
                       int backlog = 1024);

// The local port a socket is bound to (after listen_tcp with port 0).
result<std::uint16_t> bound_port(int fd);

// TCP_NODELAY on/off (latency of small SSE chunks).
result<void> set_nodelay(int fd, bool on = true);

// SO_SNDBUF / SO_RCVBUF in bytes (0 leaves it unchanged). The kernel doubles and clamps.
result<void> set_buffer_sizes(int fd, int sndbuf, int rcvbuf);

// Creates a connected pair of non-blocking, CLOEXEC AF_UNIX stream sockets (for tests).
result<void> socket_pair(int fds[2]);

}  // namespace vks::rt
