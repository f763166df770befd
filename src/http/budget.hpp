// Process-wide budgets shared by every connection of every I/O thread (and both listeners):
// the number of open connections (the accept loops stop accepting at the cap: backpressure
// through the kernel's listen backlog, never accept-and-drop) and the bytes of request data
// buffered in memory (HTTP bodies being received or handled, WebSocket messages being
// reassembled). Lock-free atomics; thread-safe. Owned by the composition root; must outlive
// every serve() that uses it.
#pragma once

#include <atomic>
#include <cstddef>
#include <utility>

namespace vks::http {

class server_budget {
 public:
  // 0 = unlimited for either limit.
  server_budget(std::size_t max_connections, std::size_t max_buffered_bytes) noexcept
      : max_connections_(max_connections), max_buffered_bytes_(max_buffered_bytes) {}
  server_budget(const server_budget&) = delete;
  server_budget& operator=(const server_budget&) = delete;

  // Accept loops wait while at_connection_cap(), then count each accepted socket with
  // open_connection() (unconditionally: loops racing on the last slot may pass the cap by at
  // most one connection each) and close_connection() when it closes.
  bool at_connection_cap() const noexcept;
  void open_connection() noexcept { n_connections_.fetch_add(1, std::memory_order_relaxed); }
  void close_connection() noexcept;

  // Charges `n` buffered bytes; false (nothing charged) when the total would pass the limit.
  bool try_charge(std::size_t n) noexcept;
  void release(std::size_t n) noexcept;

  std::size_t n_connections() const noexcept { return n_connections_.load(std::memory_order_relaxed); }
  std::size_t n_buffered_bytes() const noexcept { return n_buffered_.load(std::memory_order_relaxed); }
  std::size_t max_connections() const noexcept { return max_connections_; }
  std::size_t max_buffered_bytes() const noexcept { return max_buffered_bytes_; }

 private:
  const std::size_t max_connections_;
  const std::size_t max_buffered_bytes_;
  std::atomic<std::size_t> n_connections_{0};
  std::atomic<std::size_t> n_buffered_{0};
};

// The bytes one holder (a request, a WebSocket message) has charged to a budget; grows with
// charge_to(), returns everything on release() or destruction. A null budget charges nothing
// and always succeeds. Move-only; one thread.
class budget_charge {
 public:
  budget_charge() = default;
  explicit budget_charge(server_budget* b) noexcept : budget_(b) {}
  budget_charge(budget_charge&& o) noexcept
      : budget_(o.budget_), n_(std::exchange(o.n_, 0)) {}
  budget_charge& operator=(budget_charge&& o) noexcept {
    if (this != &o) {
      release();
      budget_ = o.budget_;
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  ~budget_charge() { release(); }

  // Sets the charge to `total` bytes. Raising it may be refused (false; the charge stays as
  // it was); lowering it always succeeds.
  bool charge_to(std::size_t total) noexcept;
  void release() noexcept;
  std::size_t n_charged() const noexcept { return n_; }

 private:
  server_budget* budget_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace vks::http
