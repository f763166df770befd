// channel<T>: an unbounded multi-producer, single-consumer queue from any thread to one
// coroutine on a loop. push()/close() are thread-safe and never block on the consumer
// (a short mutex section); the consumer is woken through its loop's post queue (eventfd),
// never by polling. pop() must be awaited on a loop thread (loop::current()), by one
// consumer at a time. Items pushed before close() are still delivered; then pop() yields
// nullopt. Backpressure is the producer's business (it can watch size()).
#pragma once

#include <coroutine>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <stop_token>
#include <utility>

#include "base/assert.hpp"
#include "rt/loop.hpp"
#include "rt/task.hpp"

namespace vks::rt {

template <class T>
class channel {
 public:
  channel() = default;
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;
  ~channel() { VKS_ASSERT(!waiter_, "channel destroyed while its consumer waits"); }

  // Thread-safe. Enqueues v; false (v dropped) when the channel is closed.
  bool push(T v) {
    std::unique_lock lk(mu_);
    if (closed_) return false;
    items_.push_back(std::move(v));
    wake_locked(lk);
    return true;
  }

  // Thread-safe, idempotent. Pending items stay poppable.
  void close() {
    std::unique_lock lk(mu_);
    closed_ = true;
    wake_locked(lk);
  }

  bool closed() const {
    std::lock_guard lk(mu_);
    return closed_;
  }
  std::size_t size() const {
    std::lock_guard lk(mu_);
    return items_.size();
  }

  // Next item; nullopt when closed and drained, or when `stop` is requested (check it).
  task<std::optional<T>> pop(std::stop_token stop = {}) {
    loop* lp = loop::current();
    VKS_ASSERT(lp != nullptr, "channel::pop awaited outside a loop thread");
    for (;;) {
      {
        std::lock_guard lk(mu_);
        if (!items_.empty()) {
          std::optional<T> v(std::move(items_.front()));
          items_.pop_front();
          co_return v;
        }
        if (closed_ || stop.stop_requested()) co_return std::nullopt;
      }
      wait_awaiter w{this, lp, stop, std::nullopt};  // a named local: GCC 12 mishandles
      co_await w;                                      // non-trivial co_await temporaries
    }
  }

 private:
  struct stop_wake {
    channel* ch;
    void operator()() const {
      std::unique_lock lk(ch->mu_);
      ch->wake_locked(lk);
    }
  };
  // Suspends until a push/close/stop; re-checks state under the lock to avoid lost wakeups.
  struct wait_awaiter {
    channel* ch;
    loop* lp;
    std::stop_token stop;
    std::optional<std::stop_callback<stop_wake>> cb;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
      {
        std::lock_guard lk(ch->mu_);
        if (!ch->items_.empty() || ch->closed_) return false;
        VKS_ASSERT(!ch->waiter_, "channel has a single consumer");
        ch->waiter_ = h;
        ch->waiter_loop_ = lp;
      }
      cb.emplace(stop, stop_wake{ch});  // may run now: then the wake is already posted
      return true;
    }
    void await_resume() noexcept { cb.reset(); }
  };

  void wake_locked(std::unique_lock<std::mutex>&) {
    if (!waiter_) return;
    auto h = std::exchange(waiter_, {});
    loop* lp = std::exchange(waiter_loop_, nullptr);
    lp->post_resume(h);  // exactly one party takes the waiter, so one resume
  }

  mutable std::mutex mu_;
  std::deque<T> items_;
  bool closed_ = false;
  std::coroutine_handle<> waiter_;
  loop* waiter_loop_ = nullptr;
};

}  // namespace vks::rt
