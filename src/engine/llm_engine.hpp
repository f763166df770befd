// llm_engine: the engine thread behind the engine interface. It owns the scheduler and
// the KV block manager, drives model::runner over flattened batches (every running
// decode plus chunked prefills, one forward per step), masks (engine/constraint) and
// samples each sequence, and posts to the request's sink the events that the
// sequence's sequence_output makes of its tokens. Admission control bounds the waiting
// sequences (prompts x n) and their prompt tokens; the scheduler admits waiting work
// round-robin across request groups.
// Threading: submit/abort/stats/drain from any thread; everything else on the engine
// thread. The runner and tokenizer are borrowed and must outlive the engine.
// Faults: a device error fails every request and marks the engine unhealthy. Anything
// thrown while serving one request (masking, matching, sampling, detokenizing, stop
// rules; std::bad_alloc included) and a structured-output matcher past its caps fail
// that request alone with an error_event; the step goes on for the others.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/engine.hpp"
#include "engine/metrics.hpp"
#include "engine/scheduler.hpp"
#include "engine/session_pins.hpp"

#include "model/runner.hpp"
namespace vks::text { class tokenizer; }

namespace vks::engine {

struct constraint_vocab;

struct engine_options {
  scheduler_config sched;
  bool enable_prefix_caching = true;
  // Queue bounds, in sequences (a request counts n) and their prompt tokens (n x prompt).
  // A sequence counts from submit until it is first scheduled (or ends). Beyond either
  // bound submit fails with overloaded (429), unless nothing is queued (so one request
  // larger than a bound still runs alone rather than never).
  int max_queued_seqs = 4096;
  std::int64_t max_queued_prompt_tokens = 1 << 20;
  int max_n = 128;
  int max_logprobs = 20;
  // Cap on the KV blocks that sessions pin (request::session) in all; -1: half the pool.
  // When a request cannot fit in the pool even with nothing running, the pins of the
  // least recently used session are dropped (one session at a time) before it fails.
  int max_pinned_blocks = -1;
  // Tests only: called on the engine thread before a request's row is sampled; what it
  // throws stands for a fault while serving that request. Empty in production.
  std::function<void(const request&)> fault_hook;
  // Sampling rows ask the runner for the argmax id or top-k candidates where the sampler
  // can use them exactly (sampler::plain); false: every row is read back whole (tests
  // compare both paths).
  bool device_sampling = true;
  // Hybrid models (#23): host memory for the saved states of preempted sequences (each its
  // recurrent state slot and the KV rows of its blocks), so that they resume where they
  // stopped instead of computing their tokens again; the least recently saved copy is dropped
  // beyond it (that sequence is then recomputed). 0: preempted sequences are recomputed.
  std::int64_t max_saved_state_bytes = std::int64_t{1} << 30;
};

class llm_engine final : public engine {
 public:
  // Starts the engine thread. The KV pool is the runner's; its blocks are managed here.
  static result<std::unique_ptr<llm_engine>> start(model::runner& runner, const text::tokenizer& tok,
                                                   const engine_options& opt);
  ~llm_engine() override;  // aborts everything and joins the thread

  result<request_handle> submit(request req, std::shared_ptr<event_sink> sink) override;
  void abort(request_handle h) noexcept override;
  void release_session(std::uint64_t key) noexcept override;
  const engine_limits& limits() const noexcept override { return limits_; }
  engine_stats stats() const override;

  // Graceful drain: new submits fail with shutting_down; running requests continue.
  void drain() noexcept;
  // True until a device error made the engine unusable (then every submit fails).
  bool healthy() const noexcept { return healthy_.load(); }
  // Liveness for a watchdog (server/supervisor): steps completed, and how long the step
  // running now has run (zero between steps and while idle). Any thread.
  struct progress_info {
    std::uint64_t n_steps = 0;
    std::chrono::nanoseconds busy_for{0};
  };
  progress_info progress() const noexcept;
  // Requests still queued or running (for drain waits).
  int n_active() const;
  const engine_metrics& metrics() const { return metrics_; }
  // KV blocks pinned by sessions now (for /metrics). Any thread.
  int n_pinned_blocks() const noexcept { return n_pinned_blocks_.load(std::memory_order_relaxed); }
  // Sliding-window models with a window pool (kv_cache::n_window_blocks): the most window
  // blocks referenced at the end of any step so far (0 without one). Any thread.
  int peak_window_blocks() const noexcept { return peak_window_blocks_.load(std::memory_order_relaxed); }

 private:
  struct seq_ctx;
  struct request_ctx;
  // A row a step asked the runner for: of sequence `id`, at prompt `position` (see run_step).
  struct logit_row {
    seq_id id;
    int position;
  };
  llm_engine(model::runner& runner, const text::tokenizer& tok, const engine_options& opt);

  void thread_main();
  void intake();                                   // new submissions and aborts
  void admit(request_ctx& r);  // r is already in requests_
  void leave_queue(const request_ctx& r, seq_ctx& s);  // admission accounting (once per sequence)
  // The one way a sequence ends (scheduler forgets it, leave_queue) and a request ends
  // (done, counted as finished, aborted or failed, no longer active).
  void end_seq(request_ctx& r, seq_ctx& s);
  void end_request(request_ctx& r, std::atomic<std::uint64_t>& outcome);
  // Sends a sequence's finished_event (from its sequence_output) and ends the sequence.
  void finish_request_seq(request_ctx& r, seq_ctx& s, finished_event ev);
  void abort_request(request_ctx& r);
  // The one "fail this request" path: ends its unfinished sequences, frees their blocks,
  // sends error_event{e} (the terminal event) and releases its admission counters.
  void fail_request(request_ctx& r, const vks::error& e);
  void fail_all(const vks::error& e);
  // Runs `work` for request r; an exception fails r alone. False when r is done after it
  // (failed now or before), true when it may go on. Defined and used in llm_engine.cpp.
  template <class F>
  bool serve_guarded(request_ctx& r, F&& work);
  // A structured-output matcher past its caps fails its request; false then.
  bool grammar_ok(request_ctx& r, const seq_ctx& s);
  result<void> run_step(const step_plan& plan);
  result<void> run_embeddings(const model::batch& eb, const std::vector<logit_row>& rows, const std::vector<seq_id>& done,
                              const std::unordered_map<seq_id, std::pair<request_ctx*, seq_ctx*>>& owner);
  void deliver_token(request_ctx& r, seq_ctx& s, token_id t, std::optional<position_logprobs> lp);
  void observe_token(request_ctx& r, seq_ctx& s);  // generation metrics (TTFT, ITL)
  void count_computed(const scheduled_seq& e, const sequence_state& st, seq_ctx& s);  // computed/recomputed metrics
  model::logit_need need_of(const request_ctx& r, const seq_ctx& s) const;
  void send_prompt_logprobs(request_ctx& r);
  void pin_session(const request_ctx& r, const seq_ctx& s);  // before s ends
  // Nothing runs and the head does not fit: frees session pins (oldest first) or fails it.
  void unblock_head();

  model::runner& runner_;
  const text::tokenizer& tok_;
  engine_options opt_;
  engine_limits limits_;
  block_manager blocks_;
  std::unique_ptr<block_manager> window_blocks_;  // the window layers' pool, if the runner has one
  session_pins pins_;  // engine thread
  scheduler sched_;
  // Hybrid models: the recurrent state slot of each running sequence (model::state_cache),
  // taken when it is first planned, given back when it ends or is preempted (a preempted
  // sequence is recomputed from position 0, which restarts its state).
  std::unordered_map<seq_id, std::int32_t> state_slots_;
  result<std::int32_t> state_slot_of(seq_id id);
  void drop_state_slot(seq_id id);
  struct hybrid_plan {  // one step's checkpoint restores and the checkpoint columns in use
    std::unordered_map<seq_id, std::int32_t> restore;
    std::vector<std::int32_t> keep;
    std::unordered_set<std::uint64_t> claimed;
  };
  result<void> plan_restores(const step_plan& plan, hybrid_plan& hp);
  // Preempted hybrid sequences (step_plan::saves): their state slot and KV rows to host
  // memory before the step overwrites them (state_saves.cpp).
  result<void> save_preempted(const step_plan& plan);
  // A resumed sequence's saved copy into its fresh slot and blocks (state_saves.cpp).
  result<void> load_saved(seq_id id, std::int32_t slot, const sequence_state& st);
  // Forked siblings (step_plan::forks), after the step: the parent's state and prompt tail.
  result<void> copy_forks(const step_plan& plan);
  void drop_saved(seq_id id);
  struct saved_seq {
    int pos = 0;
    std::vector<std::byte> state, kv;
    std::uint64_t order = 0;  // when it was saved (the oldest is dropped first)
  };
  std::unordered_map<seq_id, saved_seq> saved_;
  std::int64_t saved_bytes_ = 0;
  std::uint64_t n_saves_ = 0;
  void add_state_fields(const scheduled_seq& e, const sequence_state& st, hybrid_plan& hp, model::batch& tb);
  engine_metrics metrics_;

  mutable std::mutex mu_;                          // guards the fields up to cv_
  std::vector<std::unique_ptr<request_ctx>> incoming_;
  std::vector<request_handle> aborts_;
  std::vector<std::uint64_t> session_releases_;
  std::int64_t queued_prompt_tokens_ = 0;          // of the queued sequences, under mu_
  int n_queued_seqs_ = 0;                          // incoming + waiting sequences
  int n_active_ = 0;
  bool stopping_ = false;
  std::condition_variable cv_;

  std::atomic<bool> draining_{false};
  std::atomic<bool> healthy_{true};
  std::atomic<std::uint64_t> next_handle_{1};
  std::atomic<std::uint64_t> n_submitted_{0}, n_finished_{0}, n_aborted_{0}, n_failed_{0};
  std::atomic<int> n_waiting_{0}, n_running_{0};
  std::atomic<std::uint64_t> n_steps_{0};
  std::atomic<int> n_pinned_blocks_{0};
  std::atomic<int> peak_window_blocks_{0};
  std::atomic<std::int64_t> step_began_ns_{0};     // steady_clock ns; 0 = not in a step

  // Engine-thread state.
  std::vector<std::unique_ptr<request_ctx>> requests_;
  std::unique_ptr<constraint_vocab> vocab_;  // built on the first constrained request
  std::uint64_t next_seq_ = 1;
  std::thread thread_;
};

}  // namespace vks::engine
