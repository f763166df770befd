// io_uring backend (liburing 2.3): one ring per loop. SQEs are queued by start()/cancel()
// and submitted in wait() together with the wait (one io_uring_enter per iteration).
// Every SQE's user_data is a detail::completion*; cancel SQEs point at a no-op completion.
// Cross-thread wake: an eventfd with a standing IORING_OP_READ that re-arms itself.
//
// Accept is multishot (kernel >= 5.19; one-shot before): the first accept on a listening fd
// arms one standing multishot ACCEPT owned by an `acceptor` for that fd. Each CQE hands its
// connection to the waiting accept op, or queues it until the next accept call takes it
// (so the kernel keeps accepting while the server spawns the previous connection). The
// queue is bounded (k_max_queued_accepts): when it fills, the standing ACCEPT is cancelled
// (the queued connections kept) and the next accept call that finds the queue empty arms
// it again, so a server that stops calling accept (at its connection cap) leaves further
// peers in the kernel's listen backlog instead of holding their fds. The
// acceptor is torn down (async cancel, queued fds closed) when an accept op on it is
// cancelled or when the listening fd is closed through rt::close; it is freed when its
// last CQE (no IORING_CQE_F_MORE) arrives, so a reused fd number gets a fresh acceptor.
#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rt/detail/backend.hpp"

namespace vks::rt::detail {
namespace {

completion ignore_completion{[](completion*, int) {}};

class uring_backend final : public backend_impl {
 public:
  uring_backend() = default;
  ~uring_backend() override {
    if (ring_ok_) io_uring_queue_exit(&ring_);  // no CQE arrives after this
    for (auto& [fd, a] : acceptors_) a->close_queued();
    for (auto& a : dying_) a->close_queued();
    if (efd_ >= 0) ::close(efd_);
  }

  result<void> init(unsigned n_entries) {
    // COOP_TASKRUN: completions are not pushed at the task by interrupting it; they are
    // run when it enters the kernel. TASKRUN_FLAG makes the kernel say so in the SQ ring
    // flags, and then io_uring_submit() enters (with GETEVENTS) even with nothing to
    // submit, which is what lets wait(0) (the loop's idle polling) see new completions.
    io_uring_params p{};
    p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
    int r = io_uring_queue_init_params(n_entries, &ring_, &p);
    if (r == -EINVAL) {  // kernels before 5.19 reject both; task work then interrupts us
      p = io_uring_params{};
      r = io_uring_queue_init_params(n_entries, &ring_, &p);
    }
    if (r < 0) return fail(errc::unsupported, errno_text("io_uring_setup", -r));
    ring_ok_ = true;
    if (auto s = probe(); !s) return s;
    efd_ = ::eventfd(0, EFD_CLOEXEC);  // blocking: the standing READ waits in the kernel
    if (efd_ < 0) return fail(errc::io, errno_text("eventfd", errno));
    wake_c_.on_complete = &on_wake;
    wake_c_.self = this;
    arm_wake();
    return ok();
  }

  rt::backend kind() const noexcept override { return rt::backend::io_uring; }

  bool start(io_op& op) override {
    if (op.kind == op_kind::accept) return start_accept(op);
    if (op.kind == op_kind::close) retire_acceptor(op.fd);  // its cancel precedes the close
    io_uring_sqe* sqe = get_sqe();
    switch (op.kind) {
      case op_kind::accept:
        VKS_UNREACHABLE("handled by start_accept");
      case op_kind::recv:
        io_uring_prep_recv(sqe, op.fd, op.buf, op.len, 0);
        break;
      case op_kind::send:
        io_uring_prep_send(sqe, op.fd, op.buf, op.len, MSG_NOSIGNAL);
        break;
      case op_kind::connect:
        io_uring_prep_connect(sqe, op.fd, static_cast<const sockaddr*>(op.buf),
                              static_cast<socklen_t>(op.len));
        break;
      case op_kind::close:
        io_uring_prep_close(sqe, op.fd);
        break;
      case op_kind::timer:
        VKS_UNREACHABLE("timers are handled by the loop");
    }
    io_uring_sqe_set_data(sqe, static_cast<completion*>(&op));
    return true;
  }

  void cancel(io_op& op) override {
    if (op.kind == op_kind::accept) {
      auto it = acceptors_.find(op.fd);
      if (it == acceptors_.end() || it->second->waiter != &op) return;  // result already on its way
      it->second->waiter = nullptr;
      ready_.emplace_back(&op, -ECANCELED);
      retire_acceptor(op.fd);
      return;
    }
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_cancel(sqe, static_cast<completion*>(&op), 0);
    io_uring_sqe_set_data(sqe, &ignore_completion);
  }

  std::size_t wait(std::int64_t timeout_ns) override {
    io_uring_cqe* cqe = nullptr;
    if (!ready_.empty()) timeout_ns = 0;
    if (timeout_ns == 0) {
      io_uring_submit(&ring_);
    } else if (timeout_ns < 0) {
      io_uring_submit_and_wait(&ring_, 1);
    } else {
      __kernel_timespec ts{};
      ts.tv_sec = timeout_ns / 1000000000;
      ts.tv_nsec = timeout_ns % 1000000000;
      io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);  // -ETIME is fine
    }
    return dispatch();
  }

  void wake() noexcept override {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(efd_, &one, sizeof one);
  }

 private:
  struct wake_completion : completion {
    uring_backend* self = nullptr;
  };

  // The standing (multishot) accept of one listening fd; see the file comment.
  struct acceptor : completion {
    uring_backend* self = nullptr;
    int fd = -1;
    io_op* waiter = nullptr;  // the accept op waiting for a connection, if any
    std::deque<int> queued;   // connections accepted while nobody waited
    bool armed = false;       // an ACCEPT SQE is in flight (more CQEs will come)
    bool pausing = false;     // the queue filled: our cancel of the ACCEPT is in flight
    bool retired = false;     // cancelled; freed at its last CQE
    void close_queued() {
      for (int c : queued) ::close(c);
      queued.clear();
    }
  };

  bool start_accept(io_op& op) {
    std::unique_ptr<acceptor>& a = acceptors_[op.fd];
    if (!a) {
      a = std::make_unique<acceptor>();
      a->on_complete = &on_accept;
      a->self = this;
      a->fd = op.fd;
    }
    if (!a->queued.empty()) {
      op.res = a->queued.front();
      a->queued.pop_front();
      return false;
    }
    VKS_ASSERT(a->waiter == nullptr, "two concurrent accepts on one fd in one loop");
    a->waiter = &op;
    if (!a->armed) arm_accept(*a);
    return true;
  }

  void arm_accept(acceptor& a) {
    io_uring_sqe* sqe = get_sqe();
    if (multishot_accept_) io_uring_prep_multishot_accept(sqe, a.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    else io_uring_prep_accept(sqe, a.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    io_uring_sqe_set_data(sqe, static_cast<completion*>(&a));
    a.armed = true;
  }

  // Stops accepting on fd (if an acceptor exists): cancels the standing SQE, closes the
  // connections nobody took. The acceptor lives on until its last CQE.
  void retire_acceptor(int fd) {
    auto it = acceptors_.find(fd);
    if (it == acceptors_.end()) return;
    std::unique_ptr<acceptor> a = std::move(it->second);
    acceptors_.erase(it);
    a->retired = true;
    a->close_queued();
    if (a->waiter) ready_.emplace_back(std::exchange(a->waiter, nullptr), -ECANCELED);
    if (!a->armed) return;  // nothing in flight: free now
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_cancel(sqe, static_cast<completion*>(a.get()), 0);
    io_uring_sqe_set_data(sqe, &ignore_completion);
    dying_.push_back(std::move(a));
  }

  // Connections queued beyond this pause the standing accept (see the file comment).
  static constexpr std::size_t k_max_queued_accepts = 64;

  // The queue is full: cancel the standing ACCEPT (its last CQE ends the pause).
  void pause_accept(acceptor& a) {
    a.pausing = true;
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_cancel(sqe, static_cast<completion*>(&a), 0);
    io_uring_sqe_set_data(sqe, &ignore_completion);
  }

  static void on_accept(completion* c, int res) {
    auto* a = static_cast<acceptor*>(c);
    uring_backend* self = a->self;
    const bool more = (self->cqe_flags_ & IORING_CQE_F_MORE) != 0;
    if (!more) a->armed = false;
    if (a->retired) {
      if (res >= 0) ::close(res);
      if (!more) self->free_dying(a);
      return;
    }
    if (a->pausing && !more) {
      // The last CQE of the ACCEPT we cancelled (-ECANCELED, or a connection that won the
      // race). An accept that started waiting meanwhile takes a connection or re-arms.
      a->pausing = false;
      if (res >= 0) a->queued.push_back(res);
      if (a->waiter && !a->queued.empty()) {
        const int conn = a->queued.front();
        a->queued.pop_front();
        std::exchange(a->waiter, nullptr)->complete(conn);
      } else if (a->waiter && res < 0 && res != -ECANCELED) {
        std::exchange(a->waiter, nullptr)->complete(res);  // EMFILE, ...: as an unpaused end
      } else if (a->waiter) {
        self->arm_accept(*a);
      }
      return;
    }
    if (res == -EINVAL && self->multishot_accept_ && a->waiter) {
      // Kernel before 5.19: no multishot accept. Fall back to one-shot and retry.
      self->multishot_accept_ = false;
      self->arm_accept(*a);
      return;
    }
    if (res < 0 && !more && a->waiter == nullptr) return;  // ended with an error nobody waits for
    if (a->waiter) {
      // An error (EMFILE, ...) ends a multishot; the waiter gets it and the next accept re-arms.
      std::exchange(a->waiter, nullptr)->complete(res);
      return;
    }
    if (res >= 0) a->queued.push_back(res);
    if (more && !a->pausing && a->queued.size() >= k_max_queued_accepts) self->pause_accept(*a);
  }

  void free_dying(acceptor* a) {
    for (auto it = dying_.begin(); it != dying_.end(); ++it)
      if (it->get() == a) {
        dying_.erase(it);
        return;
      }
  }

  result<void> probe() {
    io_uring_probe* pr = io_uring_get_probe_ring(&ring_);
    if (pr == nullptr) return fail(errc::unsupported, "io_uring probe failed (kernel < 5.6)");
    const int need[] = {IORING_OP_ACCEPT, IORING_OP_RECV, IORING_OP_SEND, IORING_OP_CONNECT,
                        IORING_OP_CLOSE, IORING_OP_ASYNC_CANCEL, IORING_OP_READ};
    bool all = true;
    for (int opcode : need) all = all && io_uring_opcode_supported(pr, opcode);
    io_uring_free_probe(pr);
    if (!all) return fail(errc::unsupported, "io_uring lacks a required opcode");
    return ok();
  }

  // Takes results already in the CQ (bounded, so newly completed work waits a turn), then
  // the results produced by cancel()/retire_acceptor() without a CQE.
  std::size_t dispatch() {
    unsigned n = io_uring_cq_ready(&ring_);
    for (unsigned i = 0; i < n; ++i) {
      io_uring_cqe* cqe = nullptr;
      if (io_uring_peek_cqe(&ring_, &cqe) != 0) break;
      auto* c = static_cast<completion*>(io_uring_cqe_get_data(cqe));
      int res = cqe->res;
      cqe_flags_ = cqe->flags;
      io_uring_cqe_seen(&ring_, cqe);
      if (c != nullptr) c->complete(res);
    }
    std::size_t done = n;
    if (!ready_.empty()) {
      batch_.swap(ready_);
      done += batch_.size();
      for (auto& [op, res] : batch_) op->complete(res);
      batch_.clear();
    }
    return done;
  }

  io_uring_sqe* get_sqe() {
    for (;;) {
      if (io_uring_sqe* s = io_uring_get_sqe(&ring_)) return s;
      io_uring_submit(&ring_);  // SQ full: flush, then there is room
    }
  }

  void arm_wake() {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_read(sqe, efd_, &wake_buf_, sizeof wake_buf_, 0);
    io_uring_sqe_set_data(sqe, static_cast<completion*>(&wake_c_));
  }

  static void on_wake(completion* c, int res) {
    auto* self = static_cast<wake_completion*>(c)->self;
    if (res == -ECANCELED) return;  // ring teardown
    self->arm_wake();  // the loop drains posted work after wait() returns
  }

  io_uring ring_{};
  bool ring_ok_ = false;
  bool multishot_accept_ = true;   // cleared at the first -EINVAL (kernel < 5.19)
  std::uint32_t cqe_flags_ = 0;    // flags of the CQE being dispatched
  std::unordered_map<int, std::unique_ptr<acceptor>> acceptors_;  // live, by listening fd
  std::vector<std::unique_ptr<acceptor>> dying_;                  // retired, CQEs pending
  std::vector<std::pair<io_op*, int>> ready_;  // completions without a CQE (cancelled accepts)
  std::vector<std::pair<io_op*, int>> batch_;
  int efd_ = -1;
  std::uint64_t wake_buf_ = 0;
  wake_completion wake_c_;
};

}  // namespace

result<std::unique_ptr<backend_impl>> make_uring_backend(unsigned n_entries) {
  auto b = std::make_unique<uring_backend>();
  if (auto r = b->init(n_entries); !r) return fail(std::move(r).error());
  return std::unique_ptr<backend_impl>(std::move(b));
}

}  // namespace vks::rt::detail
