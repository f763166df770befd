// generation: the bridge between one HTTP request's coroutine and its engine requests
// (one per prompt). Engine events arrive on the engine thread; each request's sink pushes
// them, tagged with the prompt index, into one rt::channel whose consumer (this object,
// on the connection's loop) is resumed through the loop's post queue: the engine thread
// never blocks and the loop never waits on the GPU.
// Lifetime: the channel is shared with the sinks, so events that arrive after the handler
// returned are dropped harmlessly. The destructor aborts every request that has not
// reached its terminal event (client gone, write failed, error in a sibling prompt).
// Fairness and cache privacy: every engine request of one generation (one client request)
// gets the same engine group, so the scheduler interleaves it with other client requests
// instead of running its prompts first; the caller's salt prefix (cache_salt_prefix) is
// prepended to each request's cache_salt.
// Loop thread only (except the sinks, which run on the engine thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <stop_token>
#include <vector>

#include "base/result.hpp"
#include "engine/engine.hpp"
#include "rt/channel.hpp"
#include "rt/task.hpp"

namespace vks::server {

struct tagged_event {
  int source = 0;  // prompt index
  engine::event ev;
};

class generation {
 public:
  // `salt_prefix`: see cache_salt_prefix (replies.hpp); "" = none. `session`: the engine
  // key of a SageMaker session, set on every request (engine::request::session; 0 = none).
  explicit generation(engine::engine& eng, std::string salt_prefix = {}, std::uint64_t session = 0);
  ~generation() { abort_all(); }
  generation(const generation&) = delete;
  generation& operator=(const generation&) = delete;

  // Submits one engine request for prompt `source` (sources are 0, 1, ... in order), in
  // this generation's group and with the salt prefix. On error nothing was queued for it
  // (the caller aborts the others by returning).
  result<void> submit(engine::request req);

  // The next event of any source; nullopt when `stop` fired (the client is gone).
  rt::task<std::optional<tagged_event>> next(std::stop_token stop);

  // Events are queued (next() would not suspend).
  bool has_pending() const { return ch_->size() > 0; }
  // Every submitted request reached its terminal event.
  bool finished() const noexcept { return n_open_ == 0; }
  // Aborts every request still open (idempotent).
  void abort_all() noexcept;
  // When the engine first scheduled one of its requests (Unix ns; 0: not yet). Traces.
  std::int64_t first_scheduled_ns() const noexcept { return scheduled_->load(std::memory_order_relaxed); }

 private:
  struct source_state {
    engine::request_handle handle{};
    int n = 1;
    int n_finished = 0;
    bool open = true;
  };
  void track(const tagged_event& ev);

  engine::engine& eng_;
  std::shared_ptr<rt::channel<tagged_event>> ch_;
  std::shared_ptr<std::atomic<std::int64_t>> scheduled_ = std::make_shared<std::atomic<std::int64_t>>(0);
  std::uint64_t group_;
  std::string salt_prefix_;
  std::uint64_t session_ = 0;
  std::vector<source_state> sources_;
  int n_open_ = 0;
};

}  // namespace vks::server
