// loop: backend selection, the run() iteration (posted work -> due timers -> idle poll when
// configured -> backend wait), the userspace timer heap, and cross-thread cancellation by
// op id.
#include "rt/loop.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/log.hpp"
#include "rt/detail/backend.hpp"

namespace vks::rt {

namespace {
thread_local loop* tl_current = nullptr;

bool timer_less(const detail::timer_node* a, const detail::timer_node* b) {
  return a->when != b->when ? a->when < b->when : a->seq < b->seq;
}

result<std::optional<backend>> env_backend() {
  const char* v = std::getenv("VKS_RT_BACKEND");
  if (v == nullptr || *v == '\0') return std::optional<backend>{};
  std::string_view s(v);
  if (s == "io_uring") return std::optional<backend>{backend::io_uring};
  if (s == "epoll") return std::optional<backend>{backend::epoll};
  return fail(errc::invalid_argument,
              "VKS_RT_BACKEND must be io_uring or epoll, got '" + std::string(s) + "'");
}
}  // namespace

std::string_view to_string(backend b) noexcept {
  return b == backend::io_uring ? "io_uring" : "epoll";
}

namespace detail {
std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}
}  // namespace detail

result<std::unique_ptr<loop>> loop::create(loop_options opts) {
  std::optional<backend> want = opts.force;
  if (!want) {
    auto e = env_backend();
    if (!e) return fail(std::move(e).error());
    want = *e;
  }
  if (!want || *want == backend::io_uring) {
    auto u = detail::make_uring_backend(opts.n_ring_entries);
    if (u) return std::unique_ptr<loop>(new loop(std::move(*u), opts.idle_poll));
    if (want) return fail(std::move(u).error());  // forced: no fallback
    log::debug("rt: io_uring unavailable ({}); using epoll", u.error().message);
  }
  auto e = detail::make_epoll_backend();
  if (!e) return fail(std::move(e).error());
  return std::unique_ptr<loop>(new loop(std::move(*e), opts.idle_poll));
}

loop::loop(std::unique_ptr<detail::backend_impl> b, std::chrono::nanoseconds idle_poll)
    : be_(std::move(b)), idle_poll_ns_(idle_poll.count() > 0 ? idle_poll.count() : 0) {}

loop::~loop() {
  VKS_ASSERT(tl_current != this, "loop destroyed inside its own run()");
  VKS_ASSERT(tracked_ == nullptr, "loop destroyed with pending operations");
}

backend loop::kind() const noexcept { return be_->kind(); }

loop* loop::current() noexcept { return tl_current; }

void loop::run(task<void> main) {
  VKS_ASSERT(tl_current == nullptr, "a loop is already running on this thread");
  tl_current = this;
  std::atomic<bool> done{false};
  std::exception_ptr err;
  auto driver = detail::sync_drive(main, err);
  driver.h.promise().done = &done;
  driver.h.resume();
  while (!done.load(std::memory_order_relaxed)) {
    drain_posted();
    fire_timers();
    if (done.load(std::memory_order_relaxed)) break;
    std::int64_t t = next_timeout_ns();
    if (t != 0 && idle_poll_ns_ > 0) {
      if (idle_poll(t)) continue;
      t = next_timeout_ns();  // the window may have reached a timer
    }
    if (t != 0) ++blocking_waits_;
    be_->wait(t);
  }
  driver.h.destroy();
  tl_current = nullptr;
  if (err) std::rethrow_exception(err);
}

void loop::post(std::function<void()> fn) {
  bool need_wake = false;
  {
    std::lock_guard lk(post_mu_);
    posted_.push_back(std::move(fn));
    need_wake = !wake_pending_;
    wake_pending_ = true;
  }
  if (need_wake) be_->wake();
}

void loop::post_resume(std::coroutine_handle<> h) {
  post([h] { h.resume(); });
}

void loop::stop() {
  if (on_loop_thread()) {
    stop_.request_stop();
    return;
  }
  post([this] { stop_.request_stop(); });
}

void loop::drain_posted() {
  {
    std::lock_guard lk(post_mu_);
    if (posted_.empty()) return;
    running_.swap(posted_);
    wake_pending_ = false;
  }
  for (auto& fn : running_) fn();
  running_.clear();
}

std::int64_t loop::next_timeout_ns() const {
  {
    std::lock_guard lk(post_mu_);
    if (!posted_.empty()) return 0;
  }
  if (timers_.empty()) return -1;
  // Compare before subtracting: a cancelled timer is re-armed at time_point::min(), and
  // min() - now() overflows.
  auto when = timers_.front()->when;
  auto now = std::chrono::steady_clock::now();
  if (when <= now) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(when - now).count();
}

// Polls the backend without blocking until it handles something (true) or the idle-poll
// window, cut short by the next timer (timeout_ns > 0), has passed (false). A post() from
// another thread shows up here as the backend's wake event.
bool loop::idle_poll(std::int64_t timeout_ns) {
  const std::int64_t window = timeout_ns > 0 && timeout_ns < idle_poll_ns_ ? timeout_ns : idle_poll_ns_;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (be_->wait(0) > 0) return true;
    const auto spent = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    if (spent.count() >= window) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

// ---- timer heap (binary min-heap on (when, seq); nodes know their index) ----

namespace {
void heap_swap(std::vector<detail::timer_node*>& h, std::size_t a, std::size_t b) {
  std::swap(h[a], h[b]);
  h[a]->heap_index = a;
  h[b]->heap_index = b;
}
void sift_up(std::vector<detail::timer_node*>& h, std::size_t i) {
  while (i > 0) {
    std::size_t p = (i - 1) / 2;
    if (!timer_less(h[i], h[p])) break;
    heap_swap(h, i, p);
    i = p;
  }
}
void sift_down(std::vector<detail::timer_node*>& h, std::size_t i) {
  for (;;) {
    std::size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h.size() && timer_less(h[l], h[m])) m = l;
    if (r < h.size() && timer_less(h[r], h[m])) m = r;
    if (m == i) break;
    heap_swap(h, i, m);
    i = m;
  }
}
}  // namespace

void loop::add_timer(detail::timer_node& t) {
  VKS_ASSERT(t.heap_index == SIZE_MAX, "timer already armed");
  t.seq = timer_seq_++;
  t.heap_index = timers_.size();
  timers_.push_back(&t);
  sift_up(timers_, t.heap_index);
}

void loop::remove_timer(detail::timer_node& t) noexcept {
  std::size_t i = t.heap_index;
  if (i == SIZE_MAX) return;
  VKS_ASSERT(i < timers_.size() && timers_[i] == &t, "timer heap corrupt");
  std::size_t last = timers_.size() - 1;
  if (i != last) heap_swap(timers_, i, last);
  timers_.pop_back();
  t.heap_index = SIZE_MAX;
  if (i < timers_.size()) {
    sift_down(timers_, i);
    sift_up(timers_, i);
  }
}

// Fires due timers that existed when the call began (timers armed by a firing callback,
// even with a zero delay, wait for the next iteration so a sleep(0) loop cannot starve I/O).
void loop::fire_timers() {
  if (timers_.empty()) return;
  auto now = std::chrono::steady_clock::now();
  std::uint64_t limit = timer_seq_;
  while (!timers_.empty()) {
    detail::timer_node* t = timers_.front();
    if (t->when > now || t->seq >= limit) break;
    remove_timer(*t);
    t->fire(t);
  }
}

// ---- operations ----

bool loop::start_op(detail::io_op& op) {
  if (op.kind == detail::op_kind::timer) {
    VKS_ASSERT(op.timer != nullptr, "timer op without a node");
    add_timer(*op.timer);
    return true;
  }
  return be_->start(op);
}

void loop::cancel_op(detail::io_op& op) {
  if (op.kind == detail::op_kind::timer) {
    if (op.timer->heap_index == SIZE_MAX) return;  // already fired
    remove_timer(*op.timer);
    op.res = -ECANCELED;  // the fire callback completes with op.res
    op.timer->when = std::chrono::steady_clock::time_point::min();
    add_timer(*op.timer);
    return;
  }
  be_->cancel(op);
}

void loop::track(detail::io_op& op) noexcept {
  op.id = next_op_id_++;
  op.prev = nullptr;
  op.next = tracked_;
  if (tracked_) tracked_->prev = &op;
  tracked_ = &op;
}

void loop::untrack(detail::io_op& op) noexcept {
  if (op.prev) op.prev->next = op.next;
  else tracked_ = op.next;
  if (op.next) op.next->prev = op.prev;
  op.prev = op.next = nullptr;
  op.id = 0;
}

void loop::cancel_from_any_thread(detail::io_op& op) {
  if (on_loop_thread()) {
    cancel_op(op);
    return;
  }
  std::uint64_t id = op.id;  // op is alive here: the stop_callback dtor waits for us
  post([this, id] { cancel_by_id(id); });
}

// Rare path (cross-thread stop): linear in the number of cancellable pending ops.
void loop::cancel_by_id(std::uint64_t id) {
  for (detail::io_op* op = tracked_; op != nullptr; op = op->next) {
    if (op->id == id) {
      cancel_op(*op);
      return;
    }
  }
}

}  // namespace vks::rt
