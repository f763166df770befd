// The engine interface the server talks to: submit a request with an event sink, abort it
// at any time. Implementations own a thread that runs the model; the scheduler behind
// this interface (continuous batching, KV blocks) can change without touching callers.
//
// Threading contract
// - submit/abort/stats are thread-safe and never block on the GPU (they take a short
//   mutex to enqueue).
// - The sink is called ONLY on the engine thread and must not block: the server's sink
//   pushes into an rt::channel and wakes the connection's ring (eventfd / MSG_RING).
// - Event order per request: [prompt_logprobs_event] then, per sequence, token_events
//   followed by exactly one finished_event; or one error_event that ends everything.
//   Events of sibling sequences (n > 1) interleave.
// - After the terminal event (the n-th finished_event, or error_event) the engine drops
//   its reference to the sink and never calls it again.
// - abort(h) is idempotent and accepts unknown/finished handles. The engine stops the
//   request at its next step boundary, frees its KV blocks and delivers finished_event
//   {reason = abort} for each unfinished sequence (a sink whose client is gone ignores it).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.hpp"
#include "engine/request.hpp"

namespace vks::engine {

// Called on the engine thread. Implementations must be cheap and non-blocking.
class event_sink {
 public:
  virtual ~event_sink() = default;
  virtual void on_event(event ev) noexcept = 0;
  // The request left the queue: its first sequence was scheduled for the first time (its
  // prefill starts). Engine thread, once, before any event; for tracing. Must not block.
  virtual void on_scheduled() noexcept {}
};

// Opaque, unique per engine for its lifetime (never reused); 0 is never a valid handle.
enum class request_handle : std::uint64_t {};

// What callers need to validate and size requests before submitting.
struct engine_limits {
  int n_ctx = 0;               // max prompt + completion tokens of one sequence
  int n_vocab = 0;
  int max_n = 128;             // largest `n` accepted
  int max_logprobs = 20;       // largest logprobs/top_logprobs/prompt_logprobs
  std::vector<token_id> eos_ids;  // end-of-generation tokens of the model
};

struct engine_stats {
  int n_waiting = 0;           // submitted, not yet scheduled
  int n_running = 0;           // requests with sequences in the batch
  std::uint64_t n_submitted = 0;
  std::uint64_t n_finished = 0;  // all sequences finished (stop/length)
  std::uint64_t n_aborted = 0;
  std::uint64_t n_failed = 0;
};

class engine {
 public:
  virtual ~engine() = default;

  // Queues the request; events flow to sink. Errors (nothing is sent to the sink then):
  //   invalid_argument (empty prompt, token id >= n_vocab, n > max_n),
  //   context_overflow (resolve_max_tokens), overloaded (queue or token budget full: 429),
  //   shutting_down (draining: 503), device_lost (engine dead: 503).
  // The sink is shared: the engine keeps it alive until the terminal event.
  virtual result<request_handle> submit(request req, std::shared_ptr<event_sink> sink) = 0;

  // Stops a request (client disconnect, shutdown). Never blocks; see the contract above.
  virtual void abort(request_handle h) noexcept = 0;

  // Drops the KV blocks pinned for a session (request::session) when it closes or expires.
  // Never blocks; unknown keys are ignored. Engines without prefix caching pin nothing.
  virtual void release_session(std::uint64_t /*key*/) noexcept {}

  virtual const engine_limits& limits() const noexcept = 0;
  virtual engine_stats stats() const = 0;
};

}  // namespace vks::engine
