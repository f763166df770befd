// epoll backend: the same operations over readiness. An operation first tries its syscall
// (non-blocking); on EAGAIN it waits as the fd's reader (accept/recv) or writer
// (send/connect). An fd is registered once, edge-triggered for both directions
// (EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET), at its first wait, and stays registered until it is
// closed through rt::close: no epoll_ctl per operation. Edges are never lost: every
// operation tries its syscall before it waits, and an edge that arrives after that try is
// reported by a later epoll_wait.
// Read side, as nginx does: a reader's try that got EAGAIN, or a recv that returned fewer
// bytes than asked, leaves the fd `drained` (the kernel had nothing more at that moment, so
// any later byte raises an edge); the next reader on a drained fd skips its try and waits
// for that edge (one recv per request instead of recv + EAGAIN). Edges are recorded even
// with no waiter; a hang-up (EPOLLRDHUP/HUP/ERR) keeps the fd readable for good, since no
// edge follows it. The one case this misreads is TCP urgent data, where recv stops short
// at the mark: that connection then waits for its next byte or its timeout, as nginx's.
// Writers always try first (a send rarely finds the buffer full).
// Since a registration outlives the operations, fds that had operations must be closed with
// rt::close (io.hpp's contract); an fd number returned by accept is known to be fresh, so
// its stale state is reset.
// Results found in wait() or produced by cancel() go to a ready list dispatched at the end
// of wait(), so no user code runs while the fd table is being updated. Wake: a
// non-blocking eventfd.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <utility>
#include <vector>

#include "rt/detail/backend.hpp"

namespace vks::rt::detail {
namespace {

constexpr std::uint8_t k_connect_in_progress = 1;

class epoll_backend final : public backend_impl {
 public:
  ~epoll_backend() override {
    if (epfd_ >= 0) ::close(epfd_);
    if (efd_ >= 0) ::close(efd_);
  }

  result<void> init() {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) return fail(errc::io, errno_text("epoll_create1", errno));
    efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd_ < 0) return fail(errc::io, errno_text("eventfd", errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = efd_;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, efd_, &ev) < 0)
      return fail(errc::io, errno_text("epoll_ctl(eventfd)", errno));
    return ok();
  }

  rt::backend kind() const noexcept override { return rt::backend::epoll; }

  bool start(io_op& op) override {
    if (op.kind == op_kind::close) {
      drop_fd(op.fd);
      op.res = ::close(op.fd) == 0 ? 0 : -errno;
      return false;
    }
    const bool reader = is_reader(op);
    if (!(reader && drained(op.fd))) {
      int r = attempt(op);
      if (r != -EAGAIN) {
        finish_attempt(op, r);
        op.res = r;
        return false;
      }
    }
    fd_state& st = state(op.fd);  // a valid fd here (EAGAIN, or drained: recorded before)
    if (reader) st.drained = true;
    io_op*& slot = reader ? st.reader : st.writer;
    VKS_ASSERT(slot == nullptr, "two concurrent reads or writes on one fd");
    slot = &op;
    if (!st.registered) register_fd(op.fd);
    return true;
  }

  void cancel(io_op& op) override {
    if (op.fd < 0 || static_cast<std::size_t>(op.fd) >= fds_.size()) return;
    fd_state& st = fds_[static_cast<std::size_t>(op.fd)];
    if (st.reader == &op) st.reader = nullptr;
    else if (st.writer == &op) st.writer = nullptr;
    else return;  // already completed (maybe waiting in ready_)
    ready_.emplace_back(&op, -ECANCELED);
  }

  std::size_t wait(std::int64_t timeout_ns) override {
    if (!ready_.empty()) timeout_ns = 0;
    epoll_event evs[64];
    int n = wait_events(evs, 64, timeout_ns);
    for (int i = 0; i < n; ++i) on_event(evs[i]);
    return static_cast<std::size_t>(n) + dispatch();
  }

  void wake() noexcept override {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(efd_, &one, sizeof one);
  }

 private:
  struct fd_state {
    io_op* reader = nullptr;
    io_op* writer = nullptr;
    bool registered = false;  // in the epoll set (edge-triggered, both directions)
    bool drained = false;     // read side: nothing to read until the next edge (file comment)
    bool hung_up = false;     // EPOLLRDHUP/HUP/ERR seen: reads never wait again
  };

  static bool is_reader(const io_op& op) {
    return op.kind == op_kind::accept || op.kind == op_kind::recv;
  }

  bool drained(int fd) const {
    return fd >= 0 && static_cast<std::size_t>(fd) < fds_.size() && fds_[static_cast<std::size_t>(fd)].drained;
  }

  fd_state& state(int fd) {
    auto i = static_cast<std::size_t>(fd);
    if (i >= fds_.size()) fds_.resize(i + 1 + i / 2);
    return fds_[i];
  }

  // recv and send as raw syscalls: glibc's wrappers are thread-cancellation points, and in
  // a threaded process they switch asynchronous cancellation on and off around every call
  // (a measurable share at one recv and one send per request). vkserve never cancels threads.
  static ssize_t sys_recv(int fd, void* buf, std::size_t len, int flags) {
    return ::syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr);
  }
  static ssize_t sys_send(int fd, const void* buf, std::size_t len, int flags) {
    return ::syscall(SYS_sendto, fd, buf, len, flags, nullptr, 0);
  }

  // One non-blocking attempt: the result, or -EAGAIN to wait for readiness.
  static int attempt(io_op& op) {
    for (;;) {
      ssize_t r = -1;
      switch (op.kind) {
        case op_kind::accept:
          r = ::accept4(op.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          break;
        case op_kind::recv:
          r = sys_recv(op.fd, op.buf, op.len, MSG_DONTWAIT);
          break;
        case op_kind::send:
          r = sys_send(op.fd, op.buf, op.len, MSG_DONTWAIT | MSG_NOSIGNAL);
          break;
        case op_kind::connect:
          return attempt_connect(op);
        case op_kind::close:
        case op_kind::timer:
          VKS_UNREACHABLE("not an fd readiness operation");
      }
      if (r >= 0) return static_cast<int>(r);
      if (errno == EINTR) continue;
      return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    }
  }

  static int attempt_connect(io_op& op) {
    if (!(op.flags & k_connect_in_progress)) {
      int r = ::connect(op.fd, static_cast<const sockaddr*>(op.buf),
                        static_cast<socklen_t>(op.len));
      if (r == 0) return 0;
      if (errno != EINPROGRESS && errno != EINTR) return -errno;
      op.flags |= k_connect_in_progress;
      return -EAGAIN;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(op.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return -errno;
    if (err == EINPROGRESS || err == EALREADY) return -EAGAIN;
    return -err;
  }

  // Adds fd to the epoll set for good. Adding reports the current readiness, so an edge
  // that came between the failed try and this call is not lost either.
  void register_fd(int fd) {
    fd_state& st = fds_[static_cast<std::size_t>(fd)];
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.fd = fd;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) == 0 ||
        (errno == EEXIST && ::epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) == 0)) {
      st.registered = true;
      return;
    }
    int err = errno;  // e.g. EPERM (not pollable), EBADF: fail the waiters
    for (io_op** w : {&st.reader, &st.writer})
      if (*w) ready_.emplace_back(std::exchange(*w, nullptr), -err);
  }

  // Bookkeeping after a try that did not get EAGAIN (r: its result).
  void finish_attempt(const io_op& op, int r) {
    if (op.kind == op_kind::accept && r >= 0) forget(r);
    // A short recv emptied the receive queue: the next byte raises an edge (file comment).
    if (op.kind == op_kind::recv && r > 0 && static_cast<std::size_t>(r) < op.len) {
      fd_state& st = state(op.fd);
      if (!st.hung_up) st.drained = true;
    }
  }

  // A new fd number from accept: whatever was recorded under it belongs to a closed fd.
  void forget(int fd) {
    if (static_cast<std::size_t>(fd) < fds_.size()) fds_[static_cast<std::size_t>(fd)] = fd_state{};
  }

  void drop_fd(int fd) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= fds_.size()) return;
    fd_state& st = fds_[static_cast<std::size_t>(fd)];
    for (io_op** w : {&st.reader, &st.writer})
      if (*w) ready_.emplace_back(std::exchange(*w, nullptr), -ECANCELED);
    if (st.registered) ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
    st = fd_state{};
  }

  int wait_events(epoll_event* evs, int cap, std::int64_t timeout_ns) {
    if (use_pwait2_) {
      timespec ts{};
      ts.tv_sec = timeout_ns / 1000000000;
      ts.tv_nsec = timeout_ns % 1000000000;
      int n = ::epoll_pwait2(epfd_, evs, cap, timeout_ns < 0 ? nullptr : &ts, nullptr);
      if (n >= 0) return n;
      if (errno != ENOSYS) return 0;  // EINTR: the loop iterates again
      use_pwait2_ = false;
    }
    int ms = timeout_ns < 0 ? -1 : static_cast<int>((timeout_ns + 999999) / 1000000);
    int n = ::epoll_wait(epfd_, evs, cap, ms);
    return n < 0 ? 0 : n;
  }

  void on_event(const epoll_event& ev) {
    int fd = ev.data.fd;
    if (fd == efd_) {
      std::uint64_t v;
      [[maybe_unused]] ssize_t r = ::read(efd_, &v, sizeof v);
      return;
    }
    if (static_cast<std::size_t>(fd) >= fds_.size()) return;
    fd_state& st = fds_[static_cast<std::size_t>(fd)];
    constexpr std::uint32_t k_err = EPOLLERR | EPOLLHUP;
    if (ev.events & (EPOLLIN | EPOLLRDHUP | k_err)) {
      st.drained = false;  // recorded with or without a waiter: the next reader tries
      if (ev.events & (EPOLLRDHUP | k_err)) st.hung_up = true;
      if (st.reader) try_complete(st, st.reader);
    }
    if (st.writer && (ev.events & (EPOLLOUT | k_err))) try_complete(st, st.writer);
  }

  void try_complete(fd_state& st, io_op*& slot) {
    int r = attempt(*slot);
    if (r == -EAGAIN) {  // spurious: keep waiting for the next edge
      if (&slot == &st.reader) st.drained = true;
      return;
    }
    finish_attempt(*slot, r);
    ready_.emplace_back(std::exchange(slot, nullptr), r);
  }

  std::size_t dispatch() {
    if (ready_.empty()) return 0;
    batch_.swap(ready_);
    const std::size_t n = batch_.size();
    for (auto& [op, res] : batch_) op->complete(res);
    batch_.clear();
    return n;
  }

  int epfd_ = -1;
  int efd_ = -1;
  bool use_pwait2_ = true;
  std::vector<fd_state> fds_;
  std::vector<std::pair<io_op*, int>> ready_;
  std::vector<std::pair<io_op*, int>> batch_;
};

}  // namespace

result<std::unique_ptr<backend_impl>> make_epoll_backend() {
  auto b = std::make_unique<epoll_backend>();
  if (auto r = b->init(); !r) return fail(std::move(r).error());
  return std::unique_ptr<backend_impl>(std::move(b));
}

}  // namespace vks::rt::detail
