// The preparation workers: a FIFO of type-erased jobs under one mutex, N threads taking
// from it, and the queue bound / withdrawal / shutdown rules of prep_pool.hpp.
#include "server/prep_pool.hpp"

#include <algorithm>

namespace vks::server {

int default_prep_threads() noexcept {
  const unsigned hw = std::thread::hardware_concurrency();
  return std::clamp(static_cast<int>(hw / 2), 2, 8);
}

prep_pool::prep_pool(prep_options o) : opts_(o) {
  const int n = std::max(1, opts_.n_threads);
  n_threads_ = static_cast<std::size_t>(n);
  threads_.reserve(n_threads_);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
}

prep_pool::~prep_pool() { shutdown(); }

void prep_pool::shutdown() noexcept {
  std::deque<std::unique_ptr<job>> dropped;
  {
    std::lock_guard lk(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  dropped.clear();  // outside the lock: each tells its caller shutting_down
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

std::size_t prep_pool::n_queued() const {
  std::lock_guard lk(mu_);
  return queue_.size();
}

std::size_t prep_pool::n_running() const {
  std::lock_guard lk(mu_);
  return n_running_;
}

result<std::uint64_t> prep_pool::enqueue(std::unique_ptr<job> j) {
  std::unique_lock lk(mu_);
  if (stopping_) {
    lk.unlock();
    j.reset();  // outside the lock; what it pushes into the channel its caller never reads
    return fail(errc::shutting_down, "the server is shutting down");
  }
  // Jobs that idle workers are about to take do not wait; beyond them, max_pending may.
  const std::size_t n_idle = n_threads_ - std::min(n_threads_, n_running_);
  if (queue_.size() >= static_cast<std::size_t>(std::max(0, opts_.max_pending)) + n_idle) {
    lk.unlock();
    j.reset();
    n_rejected_.fetch_add(1, std::memory_order_relaxed);
    return fail(errc::shutting_down, "server is busy preparing requests; retry later");
  }
  const std::uint64_t id = next_id_++;
  j->id = id;
  queue_.push_back(std::move(j));
  lk.unlock();
  cv_.notify_one();
  return id;
}

bool prep_pool::withdraw(std::uint64_t id) noexcept {
  std::unique_ptr<job> gone;
  {
    std::lock_guard lk(mu_);
    auto it = std::find_if(queue_.begin(), queue_.end(), [id](const auto& j) { return j->id == id; });
    if (it == queue_.end()) return false;
    gone = std::move(*it);
    queue_.erase(it);
  }
  return true;  // `gone` (and the body it owns) is freed here, outside the lock
}

void prep_pool::work() noexcept {
  for (;;) {
    std::unique_ptr<job> j;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      j = std::move(queue_.front());
      queue_.pop_front();
      ++n_running_;
    }
    j->run();
    j.reset();  // the job's inputs are freed on the worker, not on a loop
    std::lock_guard lk(mu_);
    --n_running_;
  }
}

vks::error prep_pool::timeout_error(std::chrono::milliseconds t) {
  const auto ms = t.count();
  const std::string when = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
  return make_error(errc::shutting_down, "the request could not be prepared within " + when +
                                           " (the server is busy); retry later");
}

}  // namespace vks::server
