// `vkserve serve` configuration: the command-line options (CLI11), their documented
// defaults and the SageMaker rule that picks host, port and model when they are not given
// (docs/serving.md). Plain values; resolved once on the main thread before anything starts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/result.hpp"

namespace vks::server {

struct serve_options {
  // Network
  std::string host;                 // "" until resolved: 0.0.0.0 (SageMaker) / 127.0.0.1
  int port = -1;                    // -1 until resolved: $SAGEMAKER_BIND_TO_PORT or 8080; 0 = any free port
  int io_threads = 1;               // I/O threads (one loop each) sharing the listening socket
  int io_idle_poll_us = 50;          // see rt::loop_options::idle_poll; 0 = off
  std::string rt_backend;           // "" (auto: io_uring, else epoll) | "io_uring" | "epoll"
  std::string api_key;              // "" = no auth; else a Bearer token required on /v1/*, /tokenize,
                                    // WebSocket upgrades and (outside SageMaker) /invocations: one
                                    // of these comma-separated keys (api_keys(): one per client)
  std::string allowed_origins;      // comma list of browser Origins accepted ("*" = any); "" = none
  bool expose_model_path = false;   // /v1/models `root`: the model path (true) or the served name
  int max_connections = 2048;       // open connections, all ports and I/O threads; then accept pauses
  long long max_buffered_request_bytes = 256ll << 20;  // request bodies + WebSocket messages in memory
  double drain_timeout_s = 25.0;    // SIGTERM -> in-flight requests get this long to finish
  // Operations (docs/deploying.md)
  std::string metrics_prefix;       // "" | vllm: engine metrics also under this prefix
  std::string on_device_lost;       // recover | exit; "" until resolved: exit under systemd
                                    // ($NOTIFY_SOCKET set), else recover
  // Request preparation (server/prep_pool.hpp): decoding, templates, grammars, tokenizing
  int prep_threads = 0;             // worker threads; 0 = auto (default_prep_threads())
  int max_pending_preps = 128;      // queued preparations beyond this -> 503
  double prep_timeout_s = 30.0;     // queue wait + preparation of one request; then 503
  // Model
  std::string model;                // "" until resolved: /opt/ml/model or the bundled demo model
  std::string served_model_name;    // "" -> derived from the model (see resolve_serve_options)
  bool skip_model_name_validation = false;  // accept any `model` in requests (vLLM's env knob)
  std::string chat_template;        // file / model dir / .gguf; "" = the model's own (or ChatML)
  bool trust_request_chat_template = false;  // accept a request's `chat_template` (else 400)
  long long chat_template_max_steps = 10'000'000;  // per render (text::jinja::render_limits)
  long long chat_template_timeout_ms = 2000;       // per render; 0 = none
  std::string reasoning = "auto";   // auto | on | off: split <think>...</think> into reasoning
  std::string tool_call_parser = "auto";  // auto (from the chat template) | a format name (api::to_string)
  bool strict_tools = false;        // tool_choice auto: a started call is held to its tool's schema
  std::string gpu_backend = "vk";   // vk | ref
  std::string device;               // Vulkan device index or name substring
  bool profile = false;             // GPU timestamps per kernel, totals logged at exit
  std::string vk_tuning;            // diagnostic: gpu::vk_options::tuning ("" = by device kind)
  std::string pipeline_cache_dir;   // gpu::vk_options::pipeline_cache_dir ("" default, "off")
  // Engine
  int max_num_seqs = 64;
  int max_num_batched_tokens = 512;
  int max_model_len = 0;            // tokens per sequence; 0 = min(model context, 4096)
  int block_size = 16;              // KV block size in tokens (this build: 16 only)
  int kv_cache_tokens = 0;          // KV pool size in tokens; 0 = from gpu_memory_utilization
  std::string kv_cache_dtype = "auto";  // auto (f16 on GPUs, f32 on CPU devices) | f32 | f16 | q8_0 (vLLM's --kv-cache-dtype)
  double gpu_memory_utilization = 0.9;
  int max_queued_sequences = 4096;  // waiting sequences (prompts x n) beyond this -> 429
  long long max_queued_prompt_tokens = 1 << 20;
  int max_sequences_per_request = 256;  // prompts x n of one request beyond this -> 400
  bool prefix_cache_salt_per_key = false;  // mix the caller's API key into the cache salt
  bool enable_prompt_tokens_details = false;  // usage.prompt_tokens_details.cached_tokens
  bool embeddings = false;          // a generation model also serves /v1/embeddings (last-token pooling)
  bool enable_prefix_caching = true;
  int max_logprobs = 20;
  bool warmup = true;               // one generation before /ping says 200
  // Responses API store (response_store.hpp): store + previous_response_id + GET/DELETE
  bool responses_store = true;
  long long responses_store_max_entries = 1024;
  long long responses_store_max_bytes = 64ll << 20;
  double responses_store_ttl_s = 3600.0;
  // SageMaker stateful sessions (sagemaker_sessions.hpp; docs/deploying.md)
  bool sagemaker_sessions = false;  // $SAGEMAKER_ENABLE_STATEFUL_SESSIONS=true also enables
  double sagemaker_sessions_ttl_s = 1200.0;  // $SAGEMAKER_SESSIONS_EXPIRATION
  long long sagemaker_max_sessions = 1024;
  long long sagemaker_session_pinned_tokens = 0;  // KV tokens pinned by all sessions; 0 = half the pool
  // Resolved facts
  bool sagemaker = false;           // SageMaker mode was detected
};

// The keys of --api-key (comma-separated, spaces around each trimmed, empty ones dropped).
std::vector<std::string> api_keys(const serve_options& o);

// Registers every option on `cmd`, writing into `o`.
void add_serve_options(CLI::App& cmd, serve_options& o);

// Fills host/port/model/served name: SageMaker mode (SAGEMAKER_BIND_TO_PORT set or
// /opt/ml/model present) -> 0.0.0.0:${SAGEMAKER_BIND_TO_PORT:-8080} and /opt/ml/model;
// otherwise 127.0.0.1:8080 and the bundled models/stories260K.gguf. Checks ranges.
result<void> resolve_serve_options(serve_options& o);

}  // namespace vks::server
