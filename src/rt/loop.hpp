// loop: one event loop per thread, driving coroutines over io_uring (preferred) or epoll
// (fallback when io_uring is refused: Docker seccomp, gVisor, old kernels; or forced).
// Everything except post()/stop()/wake-related calls must be used on the thread running
// run(). Completions are never delivered inline from the call that submits or cancels an
// operation: they arrive from run()'s dispatch, which resumes the awaiting coroutine.
// Timers (sleep_for, deadline) live in a userspace heap shared by both backends.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "rt/task.hpp"

struct sockaddr;

namespace vks::rt {

enum class backend { io_uring, epoll };
std::string_view to_string(backend b) noexcept;

struct loop_options {
  // Force a backend; when unset the env var VKS_RT_BACKEND=io_uring|epoll decides, else
  // io_uring with fallback to epoll. Forcing io_uring when it is unavailable is an error.
  std::optional<backend> force;
  unsigned n_ring_entries = 256;  // io_uring SQ size (CQ is twice that)
  // Idle polling: whenever it would sleep, the loop first polls the backend without
  // blocking for up to this long (0: off) and sleeps only if nothing came. A request that
  // arrives in the window is served without the sleep and the wake-up (on a VM, a
  // cross-CPU wake-up is most of a small request's latency), at the price of up to that
  // much CPU after each wake-up. The window never runs past the next timer.
  std::chrono::nanoseconds idle_poll{0};
};

namespace detail {

// Every io_uring SQE's user_data (and every epoll waiter) points at one of these.
// complete(res) is called exactly once per started operation, on the loop thread;
// res >= 0 is the syscall result, res < 0 is -errno (-ECANCELED when cancelled).
struct completion {
  void (*on_complete)(completion*, int res) = nullptr;
  void complete(int res) { on_complete(this, res); }
};

enum class op_kind : std::uint8_t { accept, recv, send, connect, close, timer };

// A userspace timer: fire() runs on the loop thread when `when` has passed.
struct timer_node {
  std::chrono::steady_clock::time_point when{};
  std::uint64_t seq = 0;              // FIFO among equal deadlines
  std::size_t heap_index = SIZE_MAX;  // SIZE_MAX: not armed
  void (*fire)(timer_node*) = nullptr;
};

// One pending operation; lives in the awaiting coroutine's frame until complete().
// The default on_complete stores res and resumes `waiter`.
struct io_op : completion {
  op_kind kind = op_kind::timer;
  std::uint8_t flags = 0;         // backend-private state (epoll: connect in progress)
  int fd = -1;
  void* buf = nullptr;            // recv: destination, send: source, connect: sockaddr
  std::size_t len = 0;            // bytes (recv/send) or sockaddr length (connect)
  int res = 0;                    // the result once completed
  timer_node* timer = nullptr;    // kind == timer: the armed node (fire completes the op)
  std::coroutine_handle<> waiter;
  std::uint64_t id = 0;           // unique per loop; identifies the op for cross-thread cancel
  io_op* prev = nullptr;          // intrusive list of cancellable ops (loop-owned)
  io_op* next = nullptr;

  io_op() { on_complete = &resume_waiter; }
  static void resume_waiter(completion* c, int r) {
    auto* op = static_cast<io_op*>(c);
    op->res = r;
    op->waiter.resume();
  }
};

class backend_impl;  // io_uring or epoll (loop.cpp, uring_backend.cpp, epoll_backend.cpp)

}  // namespace detail

class loop {
 public:
  // Picks the backend (see loop_options). Errors: errc::io (ring/epoll/eventfd creation
  // failed), errc::unsupported (forced io_uring unavailable), errc::invalid_argument (bad env).
  static result<std::unique_ptr<loop>> create(loop_options opts = {});
  ~loop();
  loop(const loop&) = delete;
  loop& operator=(const loop&) = delete;

  backend kind() const noexcept;
  // How many times run() has waited in the backend with a non-zero timeout (went to sleep,
  // unless something was already there). For tests and diagnostics; loop thread only.
  std::uint64_t blocking_waits() const noexcept { return blocking_waits_; }

  // Runs `main` on the calling thread until it finishes, dispatching I/O, timers and posted
  // work meanwhile. main is expected to own (through scopes) every coroutine it starts, so
  // when it returns no operation is outstanding. Rethrows main's exception, if any.
  // One run() at a time; the loop may be run again afterwards.
  void run(task<void> main);

  // Thread-safe. Queues fn to run on the loop thread (FIFO) and wakes the loop (eventfd).
  // Posted work left when run() returns runs at the start of the next run() or is destroyed
  // with the loop.
  void post(std::function<void()> fn);
  // Thread-safe. Resumes `h` on the loop thread (post of a resume).
  void post_resume(std::coroutine_handle<> h);

  // Thread-safe. Requests stop on stop_token(): main and its children are expected to end
  // (servers: stop accepting, drain, return). run() still returns only when main finishes.
  // The stop callbacks run on the loop thread.
  void stop();
  std::stop_token stop_token() const noexcept { return stop_.get_token(); }

  // The loop whose run() is active on this thread, or nullptr.
  static loop* current() noexcept;
  bool on_loop_thread() const noexcept { return current() == this; }

  // ---- internal interface for rt's operations (io.cpp, timeout.cpp, channel) ----
  // Starts op. Returns false when it finished immediately (op.res set, complete() will NOT
  // be called); true when pending (complete() is called later from run()).
  bool start_op(detail::io_op& op);
  // Requests cancellation of a pending op (loop thread only). It completes soon with
  // -ECANCELED, or with its natural result if that raced ahead.
  void cancel_op(detail::io_op& op);
  // Registers op for cancellation from other threads (stop callbacks) / unregisters it.
  void track(detail::io_op& op) noexcept;
  void untrack(detail::io_op& op) noexcept;
  // Cancels op from any thread: on the loop thread directly, else via post by id.
  void cancel_from_any_thread(detail::io_op& op);
  void add_timer(detail::timer_node& t);     // t.when must be set; loop thread only
  void remove_timer(detail::timer_node& t) noexcept;  // no-op when not armed

 private:
  loop(std::unique_ptr<detail::backend_impl> b, std::chrono::nanoseconds idle_poll);
  void drain_posted();
  void fire_timers();
  std::int64_t next_timeout_ns() const;
  bool idle_poll(std::int64_t timeout_ns);
  void cancel_by_id(std::uint64_t id);

  std::unique_ptr<detail::backend_impl> be_;
  std::int64_t idle_poll_ns_ = 0;  // loop_options::idle_poll
  std::uint64_t blocking_waits_ = 0;
  std::stop_source stop_;
  // timers: binary min-heap on (when, seq)
  std::vector<detail::timer_node*> timers_;
  std::uint64_t timer_seq_ = 0;
  // cancellable ops (intrusive list), ids
  detail::io_op* tracked_ = nullptr;
  std::uint64_t next_op_id_ = 1;
  // posted work
  mutable std::mutex post_mu_;
  std::vector<std::function<void()>> posted_;
  std::vector<std::function<void()>> running_;
  bool wake_pending_ = false;  // guarded by post_mu_
};

}  // namespace vks::rt
