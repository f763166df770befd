// Engine metrics for /metrics (Prometheus text format): counters, gauges and fixed-bucket
// histograms, updated by the engine thread and read by any thread (relaxed atomics:
// a scrape may see a histogram mid-update, which Prometheus tolerates).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace vks::engine {

// Latency histogram in seconds with fixed upper bounds (vLLM-like buckets).
class histogram {
 public:
  static constexpr std::array<double, 14> bounds{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                                 0.25, 0.5, 1.0, 2.5, 5.0, 10.0};
  void observe(double seconds) noexcept;
  // Appends `name_bucket{<labels>,le=...}`, `name_sum{<labels>}`, `name_count{<labels>}`;
  // labels is a comma-separated list such as `model_name="x"` (may be empty).
  void render(std::string& out, const std::string& name, const std::string& help,
              const std::string& labels = {}) const;
  std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<std::uint64_t>, bounds.size() + 1> counts_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<double> sum_{0.0};
};

struct engine_metrics {
  std::atomic<std::uint64_t> prompt_tokens{0};       // prompt tokens computed or cached
  std::atomic<std::uint64_t> generation_tokens{0};
  std::atomic<std::uint64_t> prefix_queries{0};      // prompt tokens looked up in the cache
  std::atomic<std::uint64_t> prefix_hits{0};         // of which found
  std::atomic<std::uint64_t> preemptions{0};
  // Hybrid state cache (#23): prompt positions run through the model (a prompt forked to
  // n > 1 choices counts once, cached ones not at all); positions computed a second time
  // for the same sequence (after a preemption without a saved state); siblings forked from
  // a computed prompt; preempted sequences whose state was saved, and resumed from it.
  std::atomic<std::uint64_t> prompt_tokens_computed{0};
  std::atomic<std::uint64_t> recomputed_tokens{0};
  std::atomic<std::uint64_t> forked_seqs{0};
  std::atomic<std::uint64_t> state_saves{0};
  std::atomic<std::uint64_t> state_restores{0};
  std::atomic<int> kv_blocks_used{0};
  std::atomic<int> kv_blocks_total{0};
  histogram ttft;              // submit -> first token
  histogram itl;               // between tokens of one sequence
  histogram e2e;               // submit -> finish
  histogram queue_time;        // submit -> first scheduled
};

struct engine_stats;

// The whole engine as Prometheus text exposition (version 0.0.4). Metric names follow
// vLLM's (`vkserve:` instead of `vllm:`) so existing dashboards map one to one:
// num_requests_running/waiting (sequences), kv_cache_usage_perc, kv_blocks_used/total,
// prefix_cache_queries/hits_total (tokens), prompt/generation_tokens_total,
// num_preemptions_total, request_success/aborted/failed_total, and the histograms
// time_to_first_token_seconds, inter_token_latency_seconds, e2e_request_latency_seconds,
// request_queue_time_seconds. Every series carries model_name="<served name>".
std::string render_prometheus(const engine_metrics& m, const engine_stats& s, std::string_view model_name);

}  // namespace vks::engine
