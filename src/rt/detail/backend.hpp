// Internal: the interface both I/O backends implement (uring_backend.cpp, epoll_backend.cpp).
// All calls except wake() happen on the loop thread. A backend never calls complete()
// from start() or cancel(); only from wait().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/result.hpp"
#include "rt/loop.hpp"

namespace vks::rt::detail {

class backend_impl {
 public:
  virtual ~backend_impl() = default;
  virtual rt::backend kind() const noexcept = 0;
  // See loop::start_op. Never called with op_kind::timer.
  virtual bool start(io_op& op) = 0;
  // See loop::cancel_op. Ignores ops it no longer holds.
  virtual void cancel(io_op& op) = 0;
  // Submits queued work, waits up to timeout_ns (< 0: no limit, 0: poll) for completions or
  // a wake(), and dispatches completions (calls complete(), which resumes coroutines).
  // Returns how many events it handled (completions dispatched, a wake counts as one);
  // 0 means the call found nothing to do.
  virtual std::size_t wait(std::int64_t timeout_ns) = 0;
  // Thread-safe: makes a concurrent or the next wait() return promptly.
  virtual void wake() noexcept = 0;
};

// errc::unsupported when the kernel/sandbox refuses io_uring (caller may fall back).
result<std::unique_ptr<backend_impl>> make_uring_backend(unsigned n_entries);
result<std::unique_ptr<backend_impl>> make_epoll_backend();

// "-errno" of the current errno as a message ("accept: Too many open files").
std::string errno_text(const char* what, int err);

}  // namespace vks::rt::detail
