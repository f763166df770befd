// Prometheus rendering: names, labels, cumulative buckets.
#include "catch.hpp"

#include "engine/engine.hpp"
#include "engine/metrics.hpp"

using namespace vks::engine;

TEST_CASE("histogram buckets are cumulative and end with +Inf", "[metrics]") {
  histogram h;
  h.observe(0.0005);
  h.observe(0.03);
  h.observe(100.0);
  std::string out;
  h.render(out, "x", "help", "model_name=\"m\"");
  CHECK(out.find("x_bucket{model_name=\"m\",le=\"0.001\"} 1\n") != std::string::npos);
  CHECK(out.find("x_bucket{model_name=\"m\",le=\"0.04\"} 2\n") != std::string::npos);
  CHECK(out.find("x_bucket{model_name=\"m\",le=\"10\"} 2\n") != std::string::npos);
  CHECK(out.find("x_bucket{model_name=\"m\",le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(out.find("x_count{model_name=\"m\"} 3\n") != std::string::npos);
  CHECK(out.find("# TYPE x histogram\n") != std::string::npos);
}

TEST_CASE("render_prometheus exposes the engine's gauges and counters", "[metrics]") {
  engine_metrics m;
  m.kv_blocks_total = 100;
  m.kv_blocks_used = 25;
  m.prefix_queries = 64;
  m.prefix_hits = 48;
  m.generation_tokens = 7;
  engine_stats s;
  s.n_running = 3;
  s.n_waiting = 2;
  s.n_aborted = 1;
  std::string out = render_prometheus(m, s, "my\"model");
  CHECK(out.find("vkserve:num_requests_running{model_name=\"my\\\"model\"} 3\n") != std::string::npos);
  CHECK(out.find("vkserve:num_requests_waiting{model_name=\"my\\\"model\"} 2\n") != std::string::npos);
  CHECK(out.find("vkserve:kv_cache_usage_perc{model_name=\"my\\\"model\"} 0.25\n") != std::string::npos);
  CHECK(out.find("vkserve:kv_blocks_used{model_name=\"my\\\"model\"} 25\n") != std::string::npos);
  CHECK(out.find("vkserve:prefix_cache_hits_total{model_name=\"my\\\"model\"} 48\n") != std::string::npos);
  CHECK(out.find("vkserve:generation_tokens_total{model_name=\"my\\\"model\"} 7\n") != std::string::npos);
  CHECK(out.find("vkserve:request_aborted_total{model_name=\"my\\\"model\"} 1\n") != std::string::npos);
  CHECK(out.find("# TYPE vkserve:time_to_first_token_seconds histogram") != std::string::npos);
  CHECK(out.find("vkserve:request_queue_time_seconds_count{model_name=\"my\\\"model\"} 0\n") != std::string::npos);
}
