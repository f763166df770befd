// Test helper: a blocking WebSocket client over a raw TCP socket (10 s receive timeout so a
// broken server fails a test instead of hanging it). Sends masked frames (any bytes, also
// malformed ones) and reads server frames with the client-role parser.
#pragma once

#include "catch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "http/ws_frame.hpp"

namespace vks::http::test {

class ws_client {
 public:
  explicit ws_client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~ws_client() {
    if (fd_ >= 0) ::close(fd_);
  }
  ws_client(const ws_client&) = delete;
  ws_client& operator=(const ws_client&) = delete;

  static std::string upgrade_request(std::string_view path, std::string_view extra = {}) {
    std::string r = "GET " + std::string(path) + " HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    "Sec-WebSocket-Version: 13\r\n";
    r += extra;
    r += "\r\n";
    return r;
  }

  // Sends `request` (+ `then`, in the same write) and reads the response head; returns it
  // (status line and headers). Bytes after the head stay buffered for next().
  std::string handshake(const std::string& request, const std::string& then = {}) {
    send_raw(request + then);
    for (;;) {
      auto end = buf_.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::string head = buf_.substr(0, end + 4);
        buf_.erase(0, end + 4);
        return head;
      }
      if (!read_some()) return buf_;
    }
  }
  bool upgrade(std::string_view path) {
    std::string head = handshake(upgrade_request(path));
    return head.rfind("HTTP/1.1 101 ", 0) == 0;
  }

  void send_raw(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the server closed: later reads report it
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  static std::string frame(ws_opcode op, std::string_view payload, bool fin = true) {
    std::string out;
    append_ws_frame(out, op, payload, fin, std::array<unsigned char, 4>{0x12, 0x34, 0x56, 0x78});
    return out;
  }
  void send(ws_opcode op, std::string_view payload, bool fin = true) { send_raw(frame(op, payload, fin)); }
  void send_text(std::string_view s) { send(ws_opcode::text, s); }
  void send_close(std::uint16_t code, std::string_view reason = {}) {
    std::string out;
    append_ws_close(out, code, reason, std::array<unsigned char, 4>{1, 2, 3, 4});
    send_raw(out);
  }

  // The next server event; kind none means EOF, timeout or a connection error.
  ws_event next() {
    for (;;) {
      while (!buf_.empty()) {
        auto r = parser_.feed(buf_);
        buf_.erase(0, r.n_consumed);
        if (r.event.kind != ws_event_kind::none) return std::move(r.event);
      }
      if (!read_some()) return {};
    }
  }
  // The next data message's payload, skipping pongs ("" + kind none at EOF).
  std::string next_text() {
    for (;;) {
      auto ev = next();
      if (ev.kind == ws_event_kind::pong) continue;
      if (ev.kind != ws_event_kind::message) return "<" + describe(ev) + ">";
      return ev.payload;
    }
  }
  static std::string describe(const ws_event& ev) {
    switch (ev.kind) {
      case ws_event_kind::none: return "eof";
      case ws_event_kind::close: return "close " + std::to_string(ev.code) + " " + ev.payload;
      case ws_event_kind::error: return "error " + ev.payload;
      case ws_event_kind::ping: return "ping";
      case ws_event_kind::pong: return "pong";
      case ws_event_kind::message: return "message";
    }
    return "?";
  }
  // True when the server closed the TCP stream (EOF or reset, not a timeout).
  bool at_eof() {
    char c;
    ssize_t n;
    do n = ::recv(fd_, &c, 1, 0);
    while (n < 0 && errno == EINTR);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  void shutdown_now() {
    ::close(fd_);
    fd_ = -1;
  }

 private:
  bool read_some() {
    char tmp[65536];
    ssize_t n;
    do n = ::recv(fd_, tmp, sizeof tmp, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buf_;
  ws_frame_parser parser_{ws_role::client};
};

}  // namespace vks::http::test
