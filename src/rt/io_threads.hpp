// io_threads: N I/O threads, each running its own loop and one main coroutine produced by
// a caller-supplied factory (typically: listen_tcp(reuse_port=true) + an accept loop that
// spawns connections into a scope until loop.stop_token() is stopped).
// start/stop/join are called from one controlling thread; stop() is also safe from any
// thread (e.g. a signal-handling thread). Destroying a started io_threads stops and joins.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/result.hpp"
#include "rt/loop.hpp"
#include "rt/task.hpp"

namespace vks::rt {

class io_threads {
 public:
  // Called on the I/O thread itself; the returned task is that thread's main coroutine.
  using thread_main = std::function<task<void>(loop& lp, int thread_index)>;

  io_threads() = default;
  ~io_threads();
  io_threads(const io_threads&) = delete;
  io_threads& operator=(const io_threads&) = delete;

  // Creates n_threads loops (on the calling thread, so creation errors come back here) and
  // starts one thread per loop. n_threads >= 1 (default configuration: 1).
  // Errors: errc::invalid_argument (n_threads < 1, already started), loop::create errors.
  result<void> start(int n_threads, thread_main fn, loop_options opts = {});

  // Thread-safe: loop::stop() on every loop (their mains are expected to wind down).
  void stop();

  // Waits for every thread. Error (errc::internal) when a thread's main threw; the message
  // names the exception. After join() the object may be started again.
  result<void> join();

  std::size_t n_threads() const noexcept { return loops_.size(); }
  loop& at(std::size_t i) { return *loops_.at(i); }

 private:
  std::vector<std::unique_ptr<loop>> loops_;
  std::vector<std::thread> threads_;
  std::vector<std::string> failures_;  // one per thread, "" when its main returned cleanly
};

}  // namespace vks::rt
