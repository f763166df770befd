// prep_pool: the worker threads that prepare requests (JSON decoding and validation, chat
// template rendering, grammar compilation, tokenization) off the I/O threads, so one heavy
// request never freezes the other connections of its loop. A bounded queue (full: 503
// "server is busy preparing requests") and a per-request deadline (queue wait + work; past
// it: 503, and the worker's result is discarded when it comes). Workers cannot be killed:
// the budgets of the JSON, Jinja and grammar code bound each preparation.
// Why 503 past the deadline, not 408: the client sent its request in time (408 says it did
// not); the server was too busy, or the request too costly, to prepare it now, which a later
// retry (Retry-After) or another replica may fix, and load balancers read 503 that way.
// Thread-safety: run() is awaited on a loop thread; everything else is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <stop_token>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "rt/channel.hpp"
#include "rt/loop.hpp"
#include "rt/task.hpp"
#include "rt/timeout.hpp"

namespace vks::server {

struct prep_options {
  int n_threads = 2;                    // worker threads (>= 1)
  int max_pending = 128;                // preparations waiting for a busy worker; more -> 503
  std::chrono::milliseconds timeout{30000};  // queue wait + work, per request; then 503
};

// Threads for `--prep-threads 0` (auto): half the hardware threads, at least 2, at most 8
// (two, so that one heavy request does not hold up every small one behind it).
int default_prep_threads() noexcept;

class prep_pool {
 public:
  explicit prep_pool(prep_options o);
  ~prep_pool();  // shutdown()
  prep_pool(const prep_pool&) = delete;
  prep_pool& operator=(const prep_pool&) = delete;

  // Runs fn() (returning result<T>) on a worker and resumes the caller on its own loop with
  // the result. Never blocks the loop. Errors, besides fn's own:
  //   errc::shutting_down (503 + Retry-After, the API's "unavailable, retry" code): the
  //                      queue is full, the deadline passed (the result, when it comes, is
  //                      dropped), or the pool was shut down before the job started;
  //   errc::cancelled    `cancel` was stopped first (the client is gone): a job still queued
  //                      is withdrawn at once, a running one finishes and is dropped;
  //   errc::out_of_memory / errc::internal  fn threw (bad_alloc / anything else).
  // fn may outlive the awaiting coroutine: it must own (or share) everything it reads, never
  // refer to the request, the writer or the coroutine's locals.
  template <class F>
  rt::task<std::invoke_result_t<F&>> run(F fn, std::stop_token cancel = {});

  // Refuses new work, drops queued jobs (their callers get shutting_down) and joins the
  // workers, waiting for the running ones. Idempotent. Call it before destroying anything
  // a running job may read (the model).
  void shutdown() noexcept;

  const prep_options& options() const noexcept { return opts_; }
  std::size_t n_queued() const;
  std::size_t n_running() const;
  // Counters for tests and /metrics.
  std::uint64_t n_rejected() const noexcept { return n_rejected_.load(std::memory_order_relaxed); }
  std::uint64_t n_timed_out() const noexcept { return n_timed_out_.load(std::memory_order_relaxed); }
  std::uint64_t n_withdrawn() const noexcept { return n_withdrawn_.load(std::memory_order_relaxed); }

 private:
  struct job {
    virtual ~job() = default;
    virtual void run() noexcept = 0;
    std::uint64_t id = 0;
  };
  // The job of one run() call: its result goes into a channel the caller shares; a caller
  // that left makes the push land in a channel nobody reads, freed with the job.
  template <class F, class R>
  struct typed_job final : job {
    typed_job(F f, std::shared_ptr<rt::channel<R>> c) : fn(std::move(f)), ch(std::move(c)) {}
    ~typed_job() override {
      if (!ran) ch->push(R(fail(errc::shutting_down, "the server is shutting down")));
    }
    void run() noexcept override {
      ran = true;
      try {
        ch->push(fn());
      } catch (const std::bad_alloc&) {
        ch->push(R(fail(errc::out_of_memory, "out of memory while preparing the request")));
      } catch (const std::exception& e) {
        ch->push(R(fail(errc::internal, std::string("request preparation failed: ") + e.what())));
      }
    }
    F fn;
    std::shared_ptr<rt::channel<R>> ch;
    bool ran = false;
  };

  // Queues j; errc::shutting_down when full (counted in n_rejected) or after shutdown().
  result<std::uint64_t> enqueue(std::unique_ptr<job> j);
  // Removes job `id` if it has not started (true); false when it runs or ran already.
  bool withdraw(std::uint64_t id) noexcept;
  void work() noexcept;
  static vks::error timeout_error(std::chrono::milliseconds t);

  prep_options opts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<job>> queue_;
  std::size_t n_threads_ = 0;
  std::size_t n_running_ = 0;
  std::uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> n_rejected_{0};
  std::atomic<std::uint64_t> n_timed_out_{0};
  std::atomic<std::uint64_t> n_withdrawn_{0};
};

template <class F>
rt::task<std::invoke_result_t<F&>> prep_pool::run(F fn, std::stop_token cancel) {
  using R = std::invoke_result_t<F&>;
  rt::loop* lp = rt::loop::current();
  VKS_ASSERT(lp != nullptr, "prep_pool::run awaited outside a loop thread");
  auto ch = std::make_shared<rt::channel<R>>();
  auto id = enqueue(std::make_unique<typed_job<F, R>>(std::move(fn), ch));
  if (!id) co_return R(fail(std::move(id).error()));
  rt::deadline dl(*lp, opts_.timeout, std::move(cancel));
  auto out = co_await ch->pop(dl.token());
  if (out) co_return std::move(*out);
  if (withdraw(*id)) n_withdrawn_.fetch_add(1, std::memory_order_relaxed);
  if (dl.expired()) {
    n_timed_out_.fetch_add(1, std::memory_order_relaxed);
    co_return R(fail(timeout_error(opts_.timeout)));
  }
  co_return R(fail(errc::cancelled, "the client went away while its request was being prepared"));
}

}  // namespace vks::server
