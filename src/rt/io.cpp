// The awaitable operations of io.hpp: one op_awaiter per kernel operation, holding the
// io_op (the completion object) and, when the stop_token can stop, a stop_callback that
// cancels it. Errors map: -ECANCELED -> errc::cancelled, other -errno -> errc::io.
#include "rt/io.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "rt/detail/backend.hpp"
#include "rt/net.hpp"

namespace vks::rt {
namespace {

struct op_awaiter {
  struct cancel_cb {
    op_awaiter* self;
    void operator()() const { self->lp.cancel_from_any_thread(self->op); }
  };

  loop& lp;
  std::stop_token stop;
  detail::io_op op;
  std::optional<std::stop_callback<cancel_cb>> cb;

  op_awaiter(loop& l, std::stop_token s) : lp(l), stop(std::move(s)) {}
  op_awaiter(const op_awaiter&) = delete;

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) {
    VKS_ASSERT(lp.on_loop_thread(), "rt operation awaited off its loop thread");
    if (stop.stop_requested()) {
      op.res = -ECANCELED;
      return false;
    }
    op.waiter = h;
    if (!lp.start_op(op)) return false;
    if (stop.stop_possible()) {
      lp.track(op);
      cb.emplace(stop, cancel_cb{this});
    }
    return true;
  }
  int await_resume() {
    if (cb) {
      cb.reset();  // waits for a callback running on another thread
      lp.untrack(op);
    }
    return op.res;
  }
};

vks::unexpected op_error(const char* what, int res) {
  if (res == -ECANCELED) return fail(errc::cancelled, std::string(what) + ": cancelled");
  return fail(errc::io, detail::errno_text(what, -res));
}

struct sleep_node : detail::timer_node {
  detail::io_op* op = nullptr;
};
void sleep_fire(detail::timer_node* t) {
  auto* op = static_cast<sleep_node*>(t)->op;
  op->complete(op->res);  // 0, or -ECANCELED set by loop::cancel_op
}

}  // namespace

task<result<int>> accept(loop& lp, int listen_fd, std::stop_token stop) {
  op_awaiter a(lp, std::move(stop));
  a.op.kind = detail::op_kind::accept;
  a.op.fd = listen_fd;
  int res = co_await a;
  if (res < 0) co_return op_error("accept", res);
  co_return res;
}

task<result<std::size_t>> recv_some(loop& lp, int fd, std::span<std::byte> buf,
                                    std::stop_token stop) {
  op_awaiter a(lp, std::move(stop));
  a.op.kind = detail::op_kind::recv;
  a.op.fd = fd;
  a.op.buf = buf.data();
  a.op.len = buf.size();
  int res = co_await a;
  if (res < 0) co_return op_error("recv", res);
  co_return static_cast<std::size_t>(res);
}

task<result<void>> send_all(loop& lp, int fd, std::span<const std::byte> buf,
                            std::stop_token stop) {
  while (!buf.empty()) {
    op_awaiter a(lp, stop);
    a.op.kind = detail::op_kind::send;
    a.op.fd = fd;
    a.op.buf = const_cast<std::byte*>(buf.data());  // only read by the kernel
    a.op.len = buf.size();
    int res = co_await a;
    if (res < 0) co_return op_error("send", res);
    if (res == 0) co_return fail(errc::io, "send: sent 0 bytes");
    buf = buf.subspan(static_cast<std::size_t>(res));
  }
  co_return ok();
}

task<result<void>> close(loop& lp, int fd) {
  op_awaiter a(lp, {});
  a.op.kind = detail::op_kind::close;
  a.op.fd = fd;
  int res = co_await a;
  if (res < 0) co_return op_error("close", res);
  co_return ok();
}

task<result<void>> sleep_for(loop& lp, std::chrono::nanoseconds d, std::stop_token stop) {
  sleep_node node;
  op_awaiter a(lp, std::move(stop));
  node.op = &a.op;
  node.fire = &sleep_fire;
  node.when = std::chrono::steady_clock::now() + (d.count() > 0 ? d : std::chrono::nanoseconds(0));
  a.op.kind = detail::op_kind::timer;
  a.op.timer = &node;
  int res = co_await a;
  if (res < 0) co_return op_error("sleep", res);
  co_return ok();
}

task<result<int>> connect_tcp(loop& lp, std::string host, std::uint16_t port,
                              std::stop_token stop) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (host == "localhost") host = "127.0.0.1";
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
  } else {
    co_return fail(errc::invalid_argument, "connect: not an IP address literal: '" + host + "'");
  }
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) co_return fail(errc::io, detail::errno_text("socket", errno));
  (void)set_nodelay(fd, true);
  op_awaiter a(lp, std::move(stop));
  a.op.kind = detail::op_kind::connect;
  a.op.fd = fd;
  a.op.buf = &ss;
  a.op.len = len;
  int res = co_await a;
  if (res < 0) {
    (void)co_await close(lp, fd);  // through the backend: epoll keeps fds registered until then
    co_return op_error("connect", res);
  }
  co_return fd;
}

}  // namespace vks::rt
