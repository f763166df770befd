// scope: the owner of spawned coroutines (structured concurrency; nothing is fire-and-forget).
// spawn() starts a child at once; join() completes when every child has finished; the first
// exception a child throws is kept and rethrown by join(). request_stop()/token() are the
// cooperative cancellation children are expected to pass to their I/O.
// Thread-safety: a scope lives on one loop thread; spawn/join/request_stop from that thread.
// (token() may be observed anywhere.) Destroying a scope with live children asserts.
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <stop_token>

#include "rt/task.hpp"

namespace vks::rt {

class scope {
 public:
  scope() = default;
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;
  ~scope();  // asserts n_live() == 0 (join before destroying)

  // Takes ownership of `t` and runs it now until its first suspension. The child frame is
  // freed when it finishes. An exception it throws is stored (first one wins) for join().
  void spawn(task<void> t);

  // Completes when n_live() == 0 (immediately if already so), then rethrows the first stored
  // child exception, if any (and clears it). One joiner at a time. The scope may be reused.
  task<void> join();

  // Requests stop on token(); children observe it. Does not wait (co_await join() for that).
  void request_stop() noexcept { stop_.request_stop(); }
  bool stop_requested() const noexcept { return stop_.stop_requested(); }
  std::stop_token token() const noexcept { return stop_.get_token(); }

  std::size_t n_live() const noexcept { return n_live_; }

  // internal: called by a finishing child; returns who to resume next (joiner or noop).
  std::coroutine_handle<> on_child_done(std::exception_ptr e) noexcept;

 private:
  std::size_t n_live_ = 0;
  std::coroutine_handle<> joiner_;
  std::exception_ptr first_error_;
  std::stop_source stop_;
};

}  // namespace vks::rt
