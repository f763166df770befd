// Test helpers: a server on its own loop thread (backend from VKS_RT_BACKEND; the executable
// skips whole, before any test, when that backend is unavailable) and a blocking raw-socket HTTP client that reads exactly one
// response at a time (Content-Length, chunked, or until EOF).
#pragma once

#include "catch.hpp"
#include "precondition.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "http/headers.hpp"
#include "http/server.hpp"
#include "rt/loop.hpp"
#include "rt/net.hpp"

namespace vks::http::test {

inline const bool needs_loop = vks::test_main::require("", [] {
  auto lp = rt::loop::create();
  if (lp) return std::string();
  const char* be = std::getenv("VKS_RT_BACKEND");
  return std::string("cannot create the ") + (be ? be : "default") + " loop here: " + lp.error().message;
});

class test_server {
 public:
  // sock_buf > 0: SO_SNDBUF/SO_RCVBUF of the listening socket (inherited by accepted ones;
  // shrinking a connected socket's buffer instead can stall TCP on retransmission timers).
  test_server(router routes, server_options opts, int sock_buf = 0) : routes_(std::move(routes)), opts_(opts) {
    auto lp = rt::loop::create();
    REQUIRE(lp.ok());  // the precondition held
    lp_ = std::move(*lp);
    auto fd = rt::listen_tcp("127.0.0.1", 0, false, 128);
    REQUIRE(fd.ok());
    lfd_ = *fd;
    if (sock_buf > 0) REQUIRE(rt::set_buffer_sizes(lfd_, sock_buf, sock_buf).ok());
    port_ = *rt::bound_port(lfd_);
    thread_ = std::thread([this] { lp_->run(serve(*lp_, lfd_, routes_, opts_)); });
  }
  ~test_server() { stop(); }
  // Graceful stop: returns when serve() has drained and returned.
  void stop() {
    if (!thread_.joinable()) return;
    lp_->stop();
    thread_.join();
    ::close(lfd_);
  }
  void stop_async() { lp_->stop(); }
  std::uint16_t port() const { return port_; }
  rt::loop& lp() { return *lp_; }

 private:
  router routes_;
  server_options opts_;
  std::unique_ptr<rt::loop> lp_;
  int lfd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

struct client_response {
  int status = 0;
  std::string version;
  header_list headers;  // names lower-cased
  std::string body;
  bool chunked = false;
};

class client {
 public:
  explicit client(std::uint16_t port, int rcvbuf = 0, int sndbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    if (sndbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    timeval tv{10, 0};  // a hung server fails the test instead of hanging it
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect_blocking(reinterpret_cast<sockaddr*>(&a), sizeof a));
  }
  ~client() { close(); }
  // connect() with the EINTR the other blocking calls here retry too (io_uring task work in
  // this process interrupts them): an interrupted connect goes on in the background, so wait
  // for it and read its outcome instead of calling connect again.
  bool connect_blocking(const sockaddr* a, socklen_t len) {
    if (::connect(fd_, a, len) == 0) return true;
    if (errno != EINTR) return false;
    pollfd p{fd_, POLLOUT, 0};
    int r;
    do r = ::poll(&p, 1, 10'000);
    while (r < 0 && errno == EINTR);
    int err = 0;
    socklen_t n = sizeof err;
    return r == 1 && ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &n) == 0 && err == 0;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  // Sends all bytes (in pieces of `piece` bytes when nonzero).
  bool send(std::string_view s, std::size_t piece = 0) {
    while (!s.empty()) {
      std::size_t n = piece ? std::min(piece, s.size()) : s.size();
      ssize_t w = ::send(fd_, s.data(), n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      s.remove_prefix(static_cast<std::size_t>(w));
    }
    return true;
  }

  // Reads one response; nullopt on EOF/error before a complete one.
  std::optional<client_response> read_response(bool head_request = false) {
    client_response r;
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return std::nullopt;
    std::string head = buf_.substr(0, end + 2);
    buf_.erase(0, end + 4);
    auto line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    r.version = status_line.substr(0, 8);
    r.status = std::atoi(status_line.c_str() + 9);
    for (std::size_t pos = line_end + 2; pos < head.size();) {
      auto e = head.find("\r\n", pos);
      std::string line = head.substr(pos, e - pos);
      auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers.add(name, value);
      pos = e + 2;
    }
    if (r.status < 200 || r.status == 204 || r.status == 304 || head_request) return r;
    if (const auto* te = r.headers.find("transfer-encoding"); te && *te == "chunked") {
      r.chunked = true;
      for (;;) {
        std::size_t le;
        while ((le = buf_.find("\r\n")) == std::string::npos)
          if (!fill()) return std::nullopt;
        std::size_t size = std::stoul(buf_.substr(0, le), nullptr, 16);
        while (buf_.size() < le + 2 + size + 2)
          if (!fill()) return std::nullopt;
        r.body += buf_.substr(le + 2, size);
        buf_.erase(0, le + 2 + size + 2);
        if (size == 0) break;
      }
    } else if (const auto* cl = r.headers.find("content-length")) {
      std::size_t n = std::stoul(*cl);
      while (buf_.size() < n)
        if (!fill()) return std::nullopt;
      r.body = buf_.substr(0, n);
      buf_.erase(0, n);
    } else {
      while (fill()) {
      }
      r.body = std::move(buf_);
      buf_.clear();
    }
    return r;
  }

  // True when the server closed the connection (EOF) with no further bytes.
  bool at_eof() {
    if (!buf_.empty()) return false;
    return !fill();
  }
  std::string& pending() { return buf_; }
  int fd() const { return fd_; }

  // Reads more bytes into the buffer; false on EOF or error.
  bool fill(std::size_t chunk = 65536) {
    std::string tmp(chunk, '\0');
    ssize_t n;
    do n = ::recv(fd_, tmp.data(), tmp.size(), 0);  // EINTR: the kernel interrupts blocking
    while (n < 0 && errno == EINTR);                // calls here (io_uring task work)
    if (n <= 0) return false;
    buf_.append(tmp.data(), static_cast<std::size_t>(n));
    return true;
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

}  // namespace vks::http::test
