// io_threads: one std::thread per loop; each runs the factory's main coroutine to the end.
#include "rt/io_threads.hpp"

#include <exception>

#include "base/log.hpp"

namespace vks::rt {

io_threads::~io_threads() {
  if (!threads_.empty()) {
    stop();
    (void)join();
  }
}

result<void> io_threads::start(int n_threads, thread_main fn, loop_options opts) {
  if (n_threads < 1) return fail(errc::invalid_argument, "io_threads: n_threads must be >= 1");
  if (!threads_.empty()) return fail(errc::invalid_argument, "io_threads: already started");
  loops_.clear();
  for (int i = 0; i < n_threads; ++i) {
    auto lp = loop::create(opts);
    if (!lp) {
      loops_.clear();
      return fail(std::move(lp).error());
    }
    loops_.push_back(std::move(*lp));
  }
  failures_.assign(loops_.size(), std::string());
  for (int i = 0; i < n_threads; ++i) {
    threads_.emplace_back([this, i, fn] {
      loop& lp = *loops_[static_cast<std::size_t>(i)];
      try {
        lp.run(fn(lp, i));
      } catch (const std::exception& e) {
        failures_[static_cast<std::size_t>(i)] = e.what();
      } catch (...) {
        failures_[static_cast<std::size_t>(i)] = "unknown exception";
      }
    });
  }
  return ok();
}

void io_threads::stop() {
  for (auto& lp : loops_) lp->stop();
}

result<void> io_threads::join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
  std::string msg;
  for (std::size_t i = 0; i < failures_.size(); ++i) {
    if (failures_[i].empty()) continue;
    log::error("rt: I/O thread {} failed: {}", i, failures_[i]);
    if (msg.empty()) msg = "I/O thread " + std::to_string(i) + ": " + failures_[i];
  }
  failures_.clear();
  if (!msg.empty()) return fail(errc::internal, msg);
  return ok();
}

}  // namespace vks::rt
