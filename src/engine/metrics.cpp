// Histogram bookkeeping and Prometheus rendering.
#include "engine/metrics.hpp"

#include <cstdio>

#include "engine/engine.hpp"

namespace vks::engine {

void histogram::observe(double seconds) noexcept {
  size_t i = 0;
  while (i < bounds.size() && seconds > bounds[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  double cur = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(cur, cur + seconds, std::memory_order_relaxed)) {
  }
}

void histogram::render(std::string& out, const std::string& name, const std::string& help,
                       const std::string& labels) const {
  char buf[64];
  const std::string sep = labels.empty() ? "" : labels + ",";
  const std::string plain = labels.empty() ? "" : "{" + labels + "}";
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  std::uint64_t cum = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cum += counts_[i].load(std::memory_order_relaxed);
    if (i < bounds.size())
      std::snprintf(buf, sizeof buf, "%g", bounds[i]);
    else
      std::snprintf(buf, sizeof buf, "+Inf");
    out += name + "_bucket{" + sep + "le=\"" + buf + "\"} " + std::to_string(cum) + "\n";
  }
  std::snprintf(buf, sizeof buf, "%.6f", sum_.load(std::memory_order_relaxed));
  out += name + "_sum" + plain + " " + buf + "\n";
  out += name + "_count" + plain + " " + std::to_string(count_.load(std::memory_order_relaxed)) + "\n";
}

namespace {

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void scalar(std::string& out, const char* name, const char* type, const char* help, const std::string& labels,
            double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  out += std::string(name) + "{" + labels + "} " + buf + "\n";
}

}  // namespace

std::string render_prometheus(const engine_metrics& m, const engine_stats& s, std::string_view model_name) {
  const std::string labels = "model_name=\"" + escape_label(model_name) + "\"";
  const auto rd = [](const auto& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
  const double used = rd(m.kv_blocks_used), total = rd(m.kv_blocks_total);
  std::string out;
  out.reserve(8192);
  scalar(out, "vkserve:num_requests_running", "gauge", "Sequences in the running batch.", labels, s.n_running);
  scalar(out, "vkserve:num_requests_waiting", "gauge", "Sequences waiting to be scheduled.", labels, s.n_waiting);
  scalar(out, "vkserve:kv_cache_usage_perc", "gauge", "Fraction of KV blocks in use (1 = full).", labels,
         total > 0 ? used / total : 0.0);
  scalar(out, "vkserve:kv_blocks_used", "gauge", "KV cache blocks referenced by sequences.", labels, used);
  scalar(out, "vkserve:kv_blocks_total", "gauge", "KV cache blocks in the pool.", labels, total);
  scalar(out, "vkserve:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         labels, rd(m.prefix_queries));
  scalar(out, "vkserve:prefix_cache_hits_total", "counter", "Prompt tokens served from the prefix cache.", labels,
         rd(m.prefix_hits));
  scalar(out, "vkserve:prompt_tokens_total", "counter", "Prompt tokens processed (computed or cached).", labels,
         rd(m.prompt_tokens));
  scalar(out, "vkserve:generation_tokens_total", "counter", "Tokens generated.", labels, rd(m.generation_tokens));
  scalar(out, "vkserve:num_preemptions_total", "counter", "Sequences preempted for lack of KV blocks.", labels,
         rd(m.preemptions));
  scalar(out, "vkserve:prompt_tokens_computed_total", "counter",
         "Prompt positions run through the model (a prompt shared by n > 1 choices once).", labels,
         rd(m.prompt_tokens_computed));
  scalar(out, "vkserve:recomputed_tokens_total", "counter",
         "Positions of a sequence computed again after a preemption.", labels, rd(m.recomputed_tokens));
  scalar(out, "vkserve:forked_sequences_total", "counter",
         "n > 1 choices forked from a computed prompt (hybrid models).", labels, rd(m.forked_seqs));
  scalar(out, "vkserve:preempted_state_saves_total", "counter",
         "Preempted sequences whose state was saved to host memory (hybrid models).", labels, rd(m.state_saves));
  scalar(out, "vkserve:preempted_state_restores_total", "counter",
         "Preempted sequences resumed from their saved state (hybrid models).", labels, rd(m.state_restores));
  scalar(out, "vkserve:request_success_total", "counter", "Requests finished by stop or length.", labels,
         static_cast<double>(s.n_finished));
  scalar(out, "vkserve:request_aborted_total", "counter", "Requests aborted (client gone, cancel, shutdown).",
         labels, static_cast<double>(s.n_aborted));
  scalar(out, "vkserve:request_failed_total", "counter", "Requests ended by an engine error.", labels,
         static_cast<double>(s.n_failed));
  m.ttft.render(out, "vkserve:time_to_first_token_seconds", "Submit to first token.", labels);
  m.itl.render(out, "vkserve:inter_token_latency_seconds", "Time between tokens of one sequence.", labels);
  m.e2e.render(out, "vkserve:e2e_request_latency_seconds", "Submit to last token.", labels);
  m.queue_time.render(out, "vkserve:request_queue_time_seconds", "Submit to first scheduled.", labels);
  return out;
}

}  // namespace vks::engine
