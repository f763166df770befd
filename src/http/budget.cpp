// server_budget and budget_charge (see budget.hpp).
#include "http/budget.hpp"

namespace vks::http {

void server_budget::close_connection() noexcept { n_connections_.fetch_sub(1, std::memory_order_relaxed); }

bool server_budget::at_connection_cap() const noexcept {
  return max_connections_ != 0 && n_connections_.load(std::memory_order_relaxed) >= max_connections_;
}

bool server_budget::try_charge(std::size_t n) noexcept {
  std::size_t cur = n_buffered_.load(std::memory_order_relaxed);
  do {
    if (max_buffered_bytes_ != 0 && (n > max_buffered_bytes_ || cur > max_buffered_bytes_ - n)) return false;
  } while (!n_buffered_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}

void server_budget::release(std::size_t n) noexcept { n_buffered_.fetch_sub(n, std::memory_order_relaxed); }

bool budget_charge::charge_to(std::size_t total) noexcept {
  if (total <= n_) {
    if (budget_) budget_->release(n_ - total);
    n_ = total;
    return true;
  }
  if (budget_ && !budget_->try_charge(total - n_)) return false;
  n_ = total;
  return true;
}

void budget_charge::release() noexcept {
  if (budget_ && n_ != 0) budget_->release(n_);
  n_ = 0;
}

}  // namespace vks::http
