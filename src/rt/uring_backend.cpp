// io_uring backend (liburing 2.3): one ring per loop. SQEs are queued by start()/cancel()
// and submitted in wait() together with the wait (one io_uring_enter per iteration).
// Every SQE's user_data is a detail::completion*; cancel SQEs point at a no-op completion.
// Cross-thread wake: an eventfd with a standing IORING_OP_READ that re-arms itself.
#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "rt/detail/backend.hpp"

namespace vks::rt::detail {
namespace {

completion ignore_completion{[](completion*, int) {}};

class uring_backend final : public backend_impl {
 public:
  uring_backend() = default;
  ~uring_backend() override {
    if (ring_ok_) io_uring_queue_exit(&ring_);
    if (efd_ >= 0) ::close(efd_);
  }

  result<void> init(unsigned n_entries) {
    io_uring_params p{};
    p.flags = IORING_SETUP_COOP_TASKRUN;
    int r = io_uring_queue_init_params(n_entries, &ring_, &p);
    if (r == -EINVAL) {  // kernels before 5.19 reject COOP_TASKRUN
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
    io_uring_sqe* sqe = get_sqe();
    switch (op.kind) {
      case op_kind::accept:
        io_uring_prep_accept(sqe, op.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        break;
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
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_cancel(sqe, static_cast<completion*>(&op), 0);
    io_uring_sqe_set_data(sqe, &ignore_completion);
  }

  void wait(std::int64_t timeout_ns) override {
    io_uring_cqe* cqe = nullptr;
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
    dispatch();
  }

  void wake() noexcept override {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(efd_, &one, sizeof one);
  }

 private:
  struct wake_completion : completion {
    uring_backend* self = nullptr;
  };

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

  // Takes results already in the CQ (bounded, so newly completed work waits a turn).
  void dispatch() {
    unsigned n = io_uring_cq_ready(&ring_);
    for (unsigned i = 0; i < n; ++i) {
      io_uring_cqe* cqe = nullptr;
      if (io_uring_peek_cqe(&ring_, &cqe) != 0) break;
      auto* c = static_cast<completion*>(io_uring_cqe_get_data(cqe));
      int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (c != nullptr) c->complete(res);
    }
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
