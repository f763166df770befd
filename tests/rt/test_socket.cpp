// Socket operations over loopback: echo with large payloads, partial writes with tiny
// socket buffers, EOF, cancellation of recv/accept, timeouts, errors, io_threads.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common.hpp"
#include "rt/io.hpp"
#include "rt/io_threads.hpp"
#include "rt/net.hpp"
#include "rt/scope.hpp"
#include "rt/timeout.hpp"

using namespace vks;
using namespace vks::rt;
using namespace std::chrono_literals;

namespace {

std::vector<std::byte> pattern(std::size_t n) {
  std::vector<std::byte> v(n);
  std::uint32_t x = 12345;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return v;
}

// One connection through the listener `lfd`: an accept runs while a client connects to
// host:<lfd's port>. Returns {accepted fd, client fd}.
task<std::pair<int, int>> accept_connect(loop& lp, int lfd, const char* host) {
  auto port = bound_port(lfd);
  REQUIRE(port.ok());
  scope s;
  int accepted = -1;
  s.spawn(test::own([&]() -> task<void> {
    auto c = co_await accept(lp, lfd);
    REQUIRE(c.ok());
    accepted = *c;
  }));
  auto c = co_await connect_tcp(lp, host, *port);
  REQUIRE(c.ok());
  co_await s.join();
  REQUIRE(accepted >= 0);
  co_return std::pair{accepted, *c};
}

// Echoes until EOF, then closes.
task<void> echo_server(loop& lp, int conn, std::size_t chunk) {
  std::vector<std::byte> buf(chunk);
  for (;;) {
    auto n = co_await recv_some(lp, conn, buf);
    REQUIRE(n.ok());
    if (*n == 0) break;
    REQUIRE((co_await send_all(lp, conn, std::span(buf.data(), *n))).ok());
  }
  REQUIRE((co_await close(lp, conn)).ok());
}

task<std::vector<std::byte>> recv_exactly(loop& lp, int fd, std::size_t n, std::size_t chunk) {
  std::vector<std::byte> out;
  std::vector<std::byte> buf(chunk);
  while (out.size() < n) {
    auto r = co_await recv_some(lp, fd, buf);
    REQUIRE(r.ok());
    REQUIRE(*r > 0);
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*r));
  }
  co_return out;
}

void echo_roundtrip(std::size_t size, int sock_buf, std::size_t chunk) {
  auto lp = test::make_loop();
  auto lfd = listen_tcp("127.0.0.1", 0, false, 16);
  REQUIRE(lfd.ok());
  auto port = bound_port(*lfd);
  REQUIRE(port.ok());
  const auto data = pattern(size);
  lp->run([&]() -> task<void> {
    scope s;
    int server_conn = -1;
    s.spawn(test::own([&]() -> task<void> {
      auto c = co_await accept(*lp, *lfd);
      REQUIRE(c.ok());
      server_conn = *c;
      if (sock_buf > 0) REQUIRE(set_buffer_sizes(server_conn, sock_buf, sock_buf).ok());
      co_await echo_server(*lp, server_conn, chunk);
    }));
    auto cfd = co_await connect_tcp(*lp, "127.0.0.1", *port);
    REQUIRE(cfd.ok());
    if (sock_buf > 0) REQUIRE(set_buffer_sizes(*cfd, sock_buf, sock_buf).ok());
    std::vector<std::byte> got;
    s.spawn(test::own([&]() -> task<void> {  // receive concurrently, or both sides block on full buffers
      got = co_await recv_exactly(*lp, *cfd, data.size(), chunk);
    }));
    REQUIRE((co_await send_all(*lp, *cfd, data)).ok());
    REQUIRE(::shutdown(*cfd, SHUT_WR) == 0);
    co_await s.join();
    CHECK(got == data);
    std::byte one[1];
    auto eof = co_await recv_some(*lp, *cfd, one);  // server closed after our EOF
    REQUIRE(eof.ok());
    CHECK(*eof == 0);
    REQUIRE((co_await close(*lp, *cfd)).ok());
    REQUIRE((co_await close(*lp, *lfd)).ok());
  }());
}

}  // namespace

TEST_CASE("echo of a large payload over loopback", "[socket]") {
  echo_roundtrip(8u << 20, 0, 64 << 10);
}

TEST_CASE("idle polling serves requests that arrive in its window without sleeping", "[socket][idle_poll]") {
  loop_options o;
  o.idle_poll = 200ms;  // far longer than a loopback round trip
  auto lp = test::make_loop(o);
  auto lfd = listen_tcp("127.0.0.1", 0, false, 16);
  REQUIRE(lfd.ok());
  auto port = bound_port(*lfd);
  REQUIRE(port.ok());
  constexpr int k_rounds = 100;
  std::atomic<int> answered{0};
  std::thread client([&] {  // a plain blocking client on another thread: ping-pong
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(*port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      for (int i = 0; i < k_rounds; ++i) {
        char buf[4];
        if (::send(fd, "ping", 4, MSG_NOSIGNAL) != 4) break;
        std::size_t got = 0;
        while (got < 4) {
          ssize_t n = ::recv(fd, buf + got, 4 - got, 0);
          if (n <= 0) break;
          got += static_cast<std::size_t>(n);
        }
        if (got != 4 || std::memcmp(buf, "ping", 4) != 0) break;
        answered.fetch_add(1);
      }
    }
    ::close(fd);
  });
  std::uint64_t waits_before = 0;
  lp->run([&]() -> task<void> {
    auto c = co_await accept(*lp, *lfd);
    REQUIRE(c.ok());
    waits_before = lp->blocking_waits();
    co_await echo_server(*lp, *c, 64);
    REQUIRE((co_await close(*lp, *lfd)).ok());
  }());
  client.join();
  CHECK(answered.load() == k_rounds);
  // Without polling the loop sleeps about once per request; with it, each request lands
  // while the loop still polls after answering the one before (slack for a descheduled
  // client thread on a loaded machine).
  CHECK(lp->blocking_waits() - waits_before < k_rounds / 2);
}

TEST_CASE("partial writes with tiny socket buffers", "[socket]") {
  echo_roundtrip(1u << 20, 4096, 1000);
}

TEST_CASE("recv returns 0 on EOF and errors after reset", "[socket]") {
  auto lp = test::make_loop();
  int sv[2];
  REQUIRE(socket_pair(sv).ok());
  lp->run([&]() -> task<void> {
    const char msg[] = "hello";
    REQUIRE((co_await send_all(*lp, sv[1], std::as_bytes(std::span(msg, 5)))).ok());
    REQUIRE((co_await close(*lp, sv[1])).ok());
    std::byte buf[16];
    auto r = co_await recv_some(*lp, sv[0], buf);
    REQUIRE(r.ok());
    CHECK(*r == 5);
    CHECK(std::memcmp(buf, "hello", 5) == 0);
    auto e = co_await recv_some(*lp, sv[0], buf);
    REQUIRE(e.ok());
    CHECK(*e == 0);
    REQUIRE((co_await close(*lp, sv[0])).ok());
  }());
}

TEST_CASE("send to a closed peer is an error, not SIGPIPE", "[socket]") {
  auto lp = test::make_loop();
  int sv[2];
  REQUIRE(socket_pair(sv).ok());
  ::close(sv[1]);
  lp->run([&]() -> task<void> {
    std::vector<std::byte> big(1 << 16);
    auto r = co_await send_all(*lp, sv[0], big);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::io);
    REQUIRE((co_await close(*lp, sv[0])).ok());
  }());
}

TEST_CASE("pending recv is cancelled by stop_token and the socket stays usable", "[socket][cancel]") {
  auto lp = test::make_loop();
  int sv[2];
  REQUIRE(socket_pair(sv).ok());
  lp->run([&]() -> task<void> {
    std::byte buf[8];
    std::stop_source src;
    scope s;
    s.spawn(test::own([&]() -> task<void> {
      REQUIRE((co_await sleep_for(*lp, 2ms)).ok());
      src.request_stop();
    }));
    auto r = co_await recv_some(*lp, sv[0], buf, src.get_token());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::cancelled);
    co_await s.join();
    const char x[] = "abc";
    REQUIRE((co_await send_all(*lp, sv[1], std::as_bytes(std::span(x, 3)))).ok());
    auto r2 = co_await recv_some(*lp, sv[0], buf);
    REQUIRE(r2.ok());
    CHECK(*r2 == 3);
    REQUIRE((co_await close(*lp, sv[0])).ok());
    REQUIRE((co_await close(*lp, sv[1])).ok());
  }());
}

TEST_CASE("recv bounded by a deadline yields errc::timeout", "[socket][timeout]") {
  auto lp = test::make_loop();
  int sv[2];
  REQUIRE(socket_pair(sv).ok());
  lp->run([&]() -> task<void> {
    std::byte buf[8];
    deadline dl(*lp, 3ms);
    auto r = map_timeout(co_await recv_some(*lp, sv[0], buf, dl.token()), dl);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::timeout);
    REQUIRE((co_await close(*lp, sv[0])).ok());
    REQUIRE((co_await close(*lp, sv[1])).ok());
  }());
}

TEST_CASE("pending accept is cancelled, from the loop and from another thread", "[socket][cancel]") {
  auto lp = test::make_loop();
  auto lfd = listen_tcp("127.0.0.1", 0, false, 16);
  REQUIRE(lfd.ok());
  std::thread th;
  lp->run([&]() -> task<void> {
    deadline dl(*lp, 2ms);
    auto r = co_await accept(*lp, *lfd, dl.token());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::cancelled);

    std::stop_source src;
    th = std::thread([&] {
      std::this_thread::sleep_for(3ms);
      src.request_stop();
    });
    auto r2 = co_await accept(*lp, *lfd, src.get_token());
    REQUIRE_FALSE(r2.ok());
    CHECK(r2.error().code == errc::cancelled);
    // still accepts afterwards
    auto [accepted, c] = co_await accept_connect(*lp, *lfd, "localhost");
    REQUIRE((co_await close(*lp, accepted)).ok());
    REQUIRE((co_await close(*lp, c)).ok());
    REQUIRE((co_await close(*lp, *lfd)).ok());
  }());
  th.join();
}

TEST_CASE("connect errors are values", "[socket]") {
  auto lp = test::make_loop();
  // a port that was just free: bind, learn it, close
  auto probe = listen_tcp("127.0.0.1", 0, false, 1);
  REQUIRE(probe.ok());
  auto port = bound_port(*probe);
  REQUIRE(port.ok());
  ::close(*probe);
  lp->run([&]() -> task<void> {
    auto r = co_await connect_tcp(*lp, "127.0.0.1", *port);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::io);
    auto bad = co_await connect_tcp(*lp, "no.such.host", 80);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().code == errc::invalid_argument);
  }());
}

TEST_CASE("listen_tcp: IPv6 loopback and bad input", "[socket][net]") {
  CHECK(listen_tcp("not-an-ip", 0, false, 16).error().code == errc::invalid_argument);
  CHECK(listen_tcp("127.0.0.1", 0, false, 0).error().code == errc::invalid_argument);
  auto v6 = listen_tcp("::1", 0, true, 16);
  if (!v6.ok()) {
    WARN("IPv6 loopback unavailable: " << v6.error().message);
    return;
  }
  auto port = bound_port(*v6);
  REQUIRE(port.ok());
  CHECK(*port != 0);
  auto lp = test::make_loop();
  lp->run([&]() -> task<void> {
    scope s;
    s.spawn(test::own([&]() -> task<void> {
      auto c = co_await accept(*lp, *v6);
      REQUIRE(c.ok());
      co_await echo_server(*lp, *c, 256);
    }));
    auto c = co_await connect_tcp(*lp, "::1", *port);
    REQUIRE(c.ok());
    const char m[] = "v6";
    REQUIRE((co_await send_all(*lp, *c, std::as_bytes(std::span(m, 2)))).ok());
    auto got = co_await recv_exactly(*lp, *c, 2, 16);
    CHECK(std::memcmp(got.data(), "v6", 2) == 0);
    REQUIRE((co_await close(*lp, *c)).ok());
    co_await s.join();
    REQUIRE((co_await close(*lp, *v6)).ok());
  }());
}

TEST_CASE("io_threads serve connections and stop", "[io_threads]") {
  auto lfd = listen_tcp("127.0.0.1", 0, false, 64);
  REQUIRE(lfd.ok());
  auto port = bound_port(*lfd);
  REQUIRE(port.ok());
  std::atomic<int> served{0};
  io_threads threads;
  auto main_fn = [&](loop& lp, int index) -> task<void> {
    scope conns;
    for (;;) {
      auto c = co_await accept(lp, *lfd, lp.stop_token());
      if (!c.ok()) break;  // stopped
      conns.spawn([](loop& l, int fd, int idx, std::atomic<int>& n) -> task<void> {
        std::byte b[1];
        auto r = co_await recv_some(l, fd, b);
        if (r.ok() && *r == 1) {
          auto tag = static_cast<std::byte>('0' + idx);
          (void)co_await send_all(l, fd, std::span(&tag, 1));
          n.fetch_add(1);
        }
        (void)co_await close(l, fd);
      }(lp, *c, index, served));
    }
    co_await conns.join();
  };
  REQUIRE(threads.start(2, main_fn).ok());
  CHECK(threads.n_threads() == 2);
  CHECK(threads.start(1, main_fn).error().code == errc::invalid_argument);

  auto client = test::make_loop();
  constexpr int n_conns = 20;
  client->run([&]() -> task<void> {
    for (int i = 0; i < n_conns; ++i) {
      auto c = co_await connect_tcp(*client, "127.0.0.1", *port);
      REQUIRE(c.ok());
      const std::byte x{'x'};
      REQUIRE((co_await send_all(*client, *c, std::span(&x, 1))).ok());
      std::byte b[1];
      auto r = co_await recv_some(*client, *c, b);
      REQUIRE(r.ok());
      REQUIRE(*r == 1);
      CHECK((b[0] == std::byte{'0'} || b[0] == std::byte{'1'}));
      REQUIRE((co_await close(*client, *c)).ok());
    }
  }());
  threads.stop();
  REQUIRE(threads.join().ok());
  CHECK(served.load() == n_conns);
  ::close(*lfd);
}

TEST_CASE("connections made between accepts are all taken, in order, each one usable", "[socket][accept]") {
  // Under io_uring the first accept arms a multishot accept: the connections below arrive
  // while nobody waits and are queued for the next accept calls. Under epoll they wait in
  // the listen backlog. Either way each accept returns a distinct working connection.
  auto lp = test::make_loop();
  auto lfd = listen_tcp("127.0.0.1", 0, false, 16);
  REQUIRE(lfd.ok());
  auto port = bound_port(*lfd);
  REQUIRE(port.ok());
  lp->run([&]() -> task<void> {
    auto [first, c0] = co_await accept_connect(*lp, *lfd, "127.0.0.1");
    std::vector<int> clients;
    for (int i = 0; i < 4; ++i) {
      auto c = co_await connect_tcp(*lp, "127.0.0.1", *port);
      REQUIRE(c.ok());
      clients.push_back(*c);
    }
    REQUIRE((co_await sleep_for(*lp, 20ms)).ok());  // let the kernel finish every handshake
    for (std::size_t i = 0; i < clients.size(); ++i) {
      auto a = co_await accept(*lp, *lfd);
      REQUIRE(a.ok());
      const char m = static_cast<char>('a' + i);
      REQUIRE((co_await send_all(*lp, clients[i], std::as_bytes(std::span(&m, 1)))).ok());
      // Connections are accepted in arrival order, so accepted #i talks to client #i.
      auto got = co_await recv_exactly(*lp, *a, 1, 4);
      CHECK(static_cast<char>(got[0]) == m);
      REQUIRE((co_await close(*lp, *a)).ok());
    }
    for (int c : clients) REQUIRE((co_await close(*lp, c)).ok());
    REQUIRE((co_await close(*lp, first)).ok());
    REQUIRE((co_await close(*lp, c0)).ok());
    REQUIRE((co_await close(*lp, *lfd)).ok());
  }());
}

namespace {
std::size_t n_open_fds() {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) n += e.is_symlink() ? 1 : 0;
  return n;
}
}  // namespace

TEST_CASE("connections arriving while nobody accepts stay in the backlog beyond a bounded queue",
          "[socket][accept]") {
  // A server at its connection cap stops calling accept: io_uring's standing multishot
  // accept must then stop taking connections (their fds) after a bounded queue, leaving the
  // rest in the kernel's backlog; every one is still accepted, in order, once accepts resume.
  constexpr int n_clients = 200;
  constexpr std::size_t max_queued = 64;  // uring_backend's k_max_queued_accepts
  auto lp = test::make_loop();
  auto lfd = listen_tcp("127.0.0.1", 0, false, 1024);
  REQUIRE(lfd.ok());
  auto port = bound_port(*lfd);
  REQUIRE(port.ok());
  lp->run([&]() -> task<void> {
    auto [first, c0] = co_await accept_connect(*lp, *lfd, "127.0.0.1");
    const std::size_t fds_before = n_open_fds();
    std::vector<int> clients;
    for (int i = 0; i < n_clients; ++i) {
      auto c = co_await connect_tcp(*lp, "127.0.0.1", *port);
      REQUIRE(c.ok());
      clients.push_back(*c);
    }
    REQUIRE((co_await sleep_for(*lp, 100ms)).ok());  // the kernel completes every handshake
    const std::size_t held = n_open_fds() - fds_before - clients.size();  // accepted, untaken
    CHECK(held <= max_queued + 8);
    for (int i = 0; i < n_clients; ++i) {
      deadline dl(*lp, 5s);
      auto a = co_await accept(*lp, *lfd, dl.token());
      REQUIRE(a.ok());
      const char m = static_cast<char>('a' + i % 26);
      REQUIRE((co_await send_all(*lp, clients[i], std::as_bytes(std::span(&m, 1)))).ok());
      auto got = co_await recv_exactly(*lp, *a, 1, 4);
      CHECK(static_cast<char>(got[0]) == m);  // in arrival order across the pause
      REQUIRE((co_await close(*lp, *a)).ok());
    }
    for (int c : clients) REQUIRE((co_await close(*lp, c)).ok());
    for (int fd : {first, c0, *lfd}) REQUIRE((co_await close(*lp, fd)).ok());
  }());
}

TEST_CASE("closing a listener ends connections nobody accepted; a reused fd number starts fresh",
          "[socket][accept]") {
  auto lp = test::make_loop();
  lp->run([&]() -> task<void> {
    for (int round = 0; round < 3; ++round) {  // the same fd number comes back each round
      auto lfd = listen_tcp("127.0.0.1", 0, false, 16);
      REQUIRE(lfd.ok());
      auto port = bound_port(*lfd);
      REQUIRE(port.ok());
      auto [accepted, c] = co_await accept_connect(*lp, *lfd, "127.0.0.1");
      // Connected after the accept: queued by a multishot accept, or in the backlog.
      auto orphan = co_await connect_tcp(*lp, "127.0.0.1", *port);
      REQUIRE(orphan.ok());
      REQUIRE((co_await sleep_for(*lp, 10ms)).ok());
      REQUIRE((co_await close(*lp, *lfd)).ok());
      // The orphan's connection ends (EOF or reset), it does not hang.
      deadline dl(*lp, 2s);
      std::byte buf[4];
      auto r = co_await recv_some(*lp, *orphan, buf, dl.token());
      CHECK((!r.ok() ? r.error().code == errc::io : *r == 0));
      // The accepted connection still works.
      const char m = 'x';
      REQUIRE((co_await send_all(*lp, c, std::as_bytes(std::span(&m, 1)))).ok());
      auto got = co_await recv_exactly(*lp, accepted, 1, 4);
      CHECK(static_cast<char>(got[0]) == 'x');
      for (int fd : {accepted, c, *orphan}) REQUIRE((co_await close(*lp, fd)).ok());
    }
  }());
}

TEST_CASE("a failed connect releases its fd for reuse", "[socket]") {
  // The fd of a failed connect is closed through the backend, so a socket that gets the
  // same number later is registered afresh (epoll) and its operations complete.
  auto probe = listen_tcp("127.0.0.1", 0, false, 1);
  REQUIRE(probe.ok());
  auto dead_port = bound_port(*probe);
  REQUIRE(dead_port.ok());
  ::close(*probe);
  auto lfd = listen_tcp("127.0.0.1", 0, false, 16);
  REQUIRE(lfd.ok());
  auto port = bound_port(*lfd);
  REQUIRE(port.ok());
  auto lp = test::make_loop();
  lp->run([&]() -> task<void> {
    for (int i = 0; i < 3; ++i) {
      auto bad = co_await connect_tcp(*lp, "127.0.0.1", *dead_port);
      REQUIRE_FALSE(bad.ok());
      scope s;
      s.spawn(test::own([&]() -> task<void> {
        auto a = co_await accept(*lp, *lfd);
        REQUIRE(a.ok());
        co_await echo_server(*lp, *a, 16);
      }));
      deadline dl(*lp, 2s);
      auto c = co_await connect_tcp(*lp, "127.0.0.1", *port, dl.token());
      REQUIRE(c.ok());
      const char m[] = "ok";
      REQUIRE((co_await send_all(*lp, *c, std::as_bytes(std::span(m, 2)))).ok());
      auto got = co_await recv_exactly(*lp, *c, 2, 4);
      CHECK(std::memcmp(got.data(), "ok", 2) == 0);
      REQUIRE((co_await close(*lp, *c)).ok());
      co_await s.join();
    }
    REQUIRE((co_await close(*lp, *lfd)).ok());
  }());
}

TEST_CASE("reads after a short read: later bytes, bytes with no reader waiting, data then EOF", "[socket]") {
  // The epoll backend skips the recv after a short read and waits for the next edge (see
  // epoll_backend.cpp); every byte must still arrive, whenever it comes. Each read is
  // bounded so a lost edge fails the test instead of hanging it.
  auto lp = test::make_loop();
  auto lfd = listen_tcp("127.0.0.1", 0, false, 16);
  REQUIRE(lfd.ok());
  lp->run([&]() -> task<void> {
    auto read = [&](int fd, std::size_t cap) -> task<std::string> {
      std::vector<std::byte> buf(cap);
      deadline dl(*lp, 2s);
      auto r = map_timeout(co_await recv_some(*lp, fd, buf, dl.token()), dl);
      REQUIRE(r.ok());
      co_return std::string(reinterpret_cast<const char*>(buf.data()), *r);
    };
    auto put = [](int fd, std::string_view s) { REQUIRE(::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size())); };
    for (bool reader_waits_for_eof : {false, true}) {
      auto [srv, cli] = co_await accept_connect(*lp, *lfd, "127.0.0.1");
      put(cli, "abc");
      REQUIRE((co_await sleep_for(*lp, 2ms)).ok());
      CHECK(co_await read(srv, 64) == "abc");  // short: the queue is empty now
      {  // a reader waiting when the next bytes come
        scope s;
        std::string got;
        s.spawn(test::own([&]() -> task<void> { got = co_await read(srv, 64); }));
        put(cli, "de");
        co_await s.join();
        CHECK(got == "de");
      }
      put(cli, "fgh");  // no reader waiting when these come
      REQUIRE((co_await sleep_for(*lp, 2ms)).ok());
      CHECK(co_await read(srv, 64) == "fgh");
      put(cli, "0123456789");  // full reads leave the rest readable
      REQUIRE((co_await sleep_for(*lp, 2ms)).ok());
      CHECK(co_await read(srv, 4) == "0123");
      CHECK(co_await read(srv, 4) == "4567");
      CHECK(co_await read(srv, 4) == "89");
      if (reader_waits_for_eof) {  // data and FIN while a reader waits
        scope s;
        std::string got;
        s.spawn(test::own([&]() -> task<void> { got = co_await read(srv, 64); }));
        put(cli, "ij");
        REQUIRE(::shutdown(cli, SHUT_WR) == 0);
        co_await s.join();
        CHECK(got == "ij");
      } else {  // data and FIN with nobody reading
        put(cli, "ij");
        REQUIRE(::shutdown(cli, SHUT_WR) == 0);
        REQUIRE((co_await sleep_for(*lp, 2ms)).ok());
        CHECK(co_await read(srv, 64) == "ij");
      }
      CHECK(co_await read(srv, 64) == "");  // EOF, not a wait for an edge that never comes
      REQUIRE((co_await close(*lp, srv)).ok());
      REQUIRE((co_await close(*lp, cli)).ok());
    }
    REQUIRE((co_await close(*lp, *lfd)).ok());
  }());
}
