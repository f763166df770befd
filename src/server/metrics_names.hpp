// Metric names for other consumers of /metrics: `--metrics-prefix vllm` republishes the
// engine's series under `vllm:` (the names the Gateway API Inference Extension's endpoint
// picker and vLLM dashboards read: num_requests_waiting/running, kv_cache_usage_perc,
// the older gpu_cache_usage_perc, cache_config_info{block_size,num_gpu_blocks}); the
// `vkserve:` names stay. Pure text functions; any thread.
#pragma once

#include <string>
#include <string_view>

namespace vks::server {

// `vkserve:cache_config_info{block_size=..,num_gpu_blocks=..} 1` (vLLM's info gauge shape).
std::string cache_config_info(int block_size, int n_blocks);

// Every `vkserve:` family of `text` (Prometheus text) again under `prefix:`; for "vllm"
// also kv_cache_usage_perc as gpu_cache_usage_perc. Empty when `prefix` is empty.
std::string republish_metrics(std::string_view text, std::string_view prefix);

}  // namespace vks::server
