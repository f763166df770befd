// Command-line options of `vkserve serve` and the SageMaker/default resolution.
#include "server/serve_options.hpp"

#include <cstdlib>
#include <filesystem>

#include "model/model_file.hpp"
#include "server/comma_list.hpp"
#include "server/commands.hpp"

namespace vks::server {

void add_serve_options(CLI::App& cmd, serve_options& o) {
  cmd.add_option("--host", o.host, "listen address (default 127.0.0.1; SageMaker: 0.0.0.0)");
  cmd.add_option("--port", o.port, "listen port (default 8080 or $SAGEMAKER_BIND_TO_PORT; 0 = any free port)");
  cmd.add_option("--model,-m", o.model,
                 "a .gguf file or a Hugging Face directory (default: /opt/ml/model in SageMaker, "
                 "else the bundled models/stories260K.gguf)");
  cmd.add_option("--served-model-name", o.served_model_name,
                 "name in /v1/models and responses (default: --model as given; /opt/ml/model; stories260K)");
  cmd.add_flag("--skip-model-name-validation", o.skip_model_name_validation,
               "accept any `model` value in requests instead of answering 404 for unknown names");
  cmd.add_option("--chat-template", o.chat_template,
                 "chat template: .jinja file, tokenizer_config.json, .gguf or model directory "
                 "(default: the model's own, else ChatML)");
  cmd.add_flag("--trust-request-chat-template", o.trust_request_chat_template,
               "accept a per-request `chat_template` (code the client runs in the server's template "
               "engine; budgets still bound it); off: such requests get 400");
  cmd.add_option("--chat-template-max-steps", o.chat_template_max_steps,
                 "step budget of one chat-template render (evaluations, calls, iterations)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd.add_option("--chat-template-timeout-ms", o.chat_template_timeout_ms,
                 "wall-clock budget of one chat-template render in ms (0 = none)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--reasoning", o.reasoning,
                 "split <think>...</think> into reasoning_content: auto (template or vocab has <think>) | on | off")
      ->check(CLI::IsMember({"auto", "on", "off"}))->capture_default_str();
  cmd.add_option("--tool-call-parser", o.tool_call_parser,
                 "tool-call format of replies: auto (detected from the chat template) | none | hermes | "
                 "qwen3_xml | glm | deepseek | kimi | mistral | granite | gemma4 | pythonic | llama3_json | harmony | minimax | "
                 "functionary_v3_1 | functionary_v3_2 | seed_oss | lfm2")
      ->check(CLI::IsMember({"auto", "none", "hermes", "qwen3_xml", "glm", "deepseek", "kimi", "mistral", "granite",
                             "gemma4", "pythonic", "llama3_json", "harmony", "minimax", "functionary_v3_1",
                             "functionary_v3_2", "seed_oss", "lfm2"}))
      ->capture_default_str();
  cmd.add_flag("--strict-tools", o.strict_tools,
               "with tool_choice auto, constrain a tool call the model starts to an offered function and its "
               "parameters schema, written in the format's own syntax (JSON documents, XML-like tagged "
               "parameters, Gemma 4's quoting, Python calls)");
  cmd.add_option("--api-key", o.api_key,
                 "require `Authorization: Bearer KEY` on /v1/*, /tokenize, /detokenize, WebSocket upgrades "
                 "(or the subprotocol `bearer.KEY`) and, outside SageMaker, /invocations; several clients' "
                 "keys: KEY1,KEY2,... (env VKSERVE_API_KEY)")
      ->envname("VKSERVE_API_KEY");
  cmd.add_option("--allowed-origins", o.allowed_origins,
                 "comma-separated browser origins (scheme://host[:port]) allowed to call the API and open "
                 "WebSockets; `*` = any; default: none (requests carrying another Origin get 403)");
  cmd.add_flag("--expose-model-path", o.expose_model_path,
               "show the model's filesystem path as `root` in /v1/models (default: the served name)");
  cmd.add_option("--max-connections", o.max_connections,
                 "open connections (all ports and I/O threads); at the cap new ones wait in the listen backlog")
      ->capture_default_str();
  cmd.add_option("--max-buffered-request-bytes", o.max_buffered_request_bytes,
                 "request bodies and WebSocket messages held in memory, all connections together; a body "
                 "that does not fit gets 503 + Retry-After (a WebSocket: close 1013)")
      ->capture_default_str();
  cmd.add_option("--io-threads", o.io_threads, "I/O threads")->capture_default_str();
  cmd.add_option("--io-idle-poll-us", o.io_idle_poll_us,
                 "after handling I/O, poll this many microseconds before sleeping (0 = sleep at once)")
      ->capture_default_str();
  cmd.add_option("--backend", o.rt_backend, "I/O backend: io_uring | epoll (default: io_uring, else epoll)")
      ->check(CLI::IsMember({"", "io_uring", "epoll"}));
  cmd.add_option("--gpu-backend", o.gpu_backend, "compute backend: vk | ref")
      ->check(CLI::IsMember({"vk", "ref"}))->capture_default_str();
  cmd.add_option("--device", o.device, "Vulkan device: index or name substring (default: best)");
  cmd.add_flag("--profile", o.profile, "GPU timestamps per kernel and counters per step shape; logged (info) at exit");
  add_vk_tuning_option(cmd, o.vk_tuning);
  cmd.add_option("--pipeline-cache-dir", o.pipeline_cache_dir,
                 "where compiled GPU pipelines persist across runs (default $XDG_CACHE_HOME/vkserve, else "
                 "~/.cache/vkserve; 'off' = not persisted)");
  cmd.add_option("--max-num-seqs", o.max_num_seqs, "sequences per engine step")->capture_default_str();
  cmd.add_option("--max-num-batched-tokens", o.max_num_batched_tokens, "tokens per engine step")
      ->capture_default_str();
  cmd.add_option("--max-model-len", o.max_model_len, "tokens per sequence (0 = min(model context, 4096))")
      ->capture_default_str();
  cmd.add_option("--block-size", o.block_size, "KV cache block size in tokens (16)")->capture_default_str();
  cmd.add_option("--kv-cache-dtype", o.kv_cache_dtype,
                 "KV cache element type: auto (f16 on GPUs, f32 on CPU devices, where it matches llama2.c exactly), f32, f16, "
                 "or q8_0 (llama.cpp's 8-bit blocks: 34 bytes per 32 values; head dims divisible by 32)")
      ->capture_default_str();
  cmd.add_option("--kv-cache-tokens", o.kv_cache_tokens,
                 "KV cache pool size in tokens (0 = from --gpu-memory-utilization)")->capture_default_str();
  cmd.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "fraction of device memory for weights + KV cache when --kv-cache-tokens is 0")
      ->capture_default_str();
  cmd.add_option("--max-queued-sequences,--max-queued-requests", o.max_queued_sequences,
                 "waiting sequences (prompts x n) before 429")
      ->capture_default_str();
  cmd.add_option("--max-sequences-per-request", o.max_sequences_per_request,
                 "largest prompts x n of one request (more: 400)")
      ->capture_default_str();
  cmd.add_flag("--embeddings", o.embeddings,
               "serve /v1/embeddings from a generation model (last-token pooling of the final-normed hidden "
               "state); embedding models (GGUF pooling_type, sentence-transformers) serve it without this flag");
  cmd.add_flag("--enable-prompt-tokens-details", o.enable_prompt_tokens_details,
               "report usage.prompt_tokens_details.cached_tokens (prefix-cache hits; default null)");
  cmd.add_flag("--prefix-cache-salt-per-key", o.prefix_cache_salt_per_key,
               "mix the caller's API key into the prefix-cache salt: clients with different keys "
               "never share cached blocks (nor learn each other's prompts from their timing)");
  cmd.add_option("--max-queued-prompt-tokens", o.max_queued_prompt_tokens, "waiting prompt tokens before 429")
      ->capture_default_str();
  cmd.add_flag("!--no-enable-prefix-caching", o.enable_prefix_caching, "disable the prefix cache");
  cmd.add_option("--max-logprobs", o.max_logprobs, "largest logprobs / top_logprobs accepted")
      ->capture_default_str();
  cmd.add_flag("!--no-warmup", o.warmup, "skip the warm-up generation before /ping reports ready");
  cmd.add_option("--prep-threads", o.prep_threads,
                 "threads preparing requests off the I/O threads (JSON, chat template, grammar, tokenizer; "
                 "0 = half the hardware threads, 2..8)")
      ->capture_default_str();
  cmd.add_option("--max-pending-preps", o.max_pending_preps,
                 "requests waiting for a preparation thread before 503 (server is busy preparing requests)")
      ->capture_default_str();
  cmd.add_option("--prep-timeout", o.prep_timeout_s,
                 "seconds one request may wait for and spend in preparation before 503")
      ->capture_default_str();
  cmd.add_option("--metrics-prefix", o.metrics_prefix,
                 "also publish the engine's /metrics series under PREFIX: (vllm: the names the Gateway API "
                 "Inference Extension and vLLM dashboards read); the vkserve: names stay")
      ->check(CLI::IsMember({"", "vllm"}));
  cmd.add_option("--on-device-lost", o.on_device_lost,
                 "after the GPU is lost (VK_ERROR_DEVICE_LOST; in-flight requests get 503): recover "
                 "(re-exec with the same listening socket: new device, model reloaded) or exit (status 75, "
                 "for a supervisor to restart); default: exit under systemd ($NOTIFY_SOCKET set), else recover")
      ->check(CLI::IsMember({"recover", "exit"}));
  cmd.add_flag("--sagemaker-sessions", o.sagemaker_sessions,
               "SageMaker stateful sessions on /invocations ({\"requestType\": \"NEW_SESSION\"|\"CLOSE\"}, "
               "X-Amzn-SageMaker-Session-Id); a session pins its conversation's KV blocks in the prefix cache "
               "(env SAGEMAKER_ENABLE_STATEFUL_SESSIONS=true)")
      ->envname("SAGEMAKER_ENABLE_STATEFUL_SESSIONS");
  cmd.add_option("--sagemaker-sessions-ttl", o.sagemaker_sessions_ttl_s,
                 "seconds a session lives from its creation (env SAGEMAKER_SESSIONS_EXPIRATION)")
      ->envname("SAGEMAKER_SESSIONS_EXPIRATION")->check(CLI::Range(1.0, 1e7))->capture_default_str();
  cmd.add_option("--sagemaker-max-sessions", o.sagemaker_max_sessions,
                 "open sessions at most (NEW_SESSION beyond: 424)")
      ->check(CLI::Range(1ll, 1ll << 24))->capture_default_str();
  cmd.add_option("--sagemaker-session-pinned-tokens", o.sagemaker_session_pinned_tokens,
                 "KV-cache tokens all sessions together may pin (0 = half the KV pool); a request that "
                 "cannot fit beside the pins drops the least recently used session's pins")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--drain-timeout", o.drain_timeout_s,
                 "seconds in-flight requests get to finish after SIGTERM/SIGINT")->capture_default_str();
  cmd.add_flag("!--no-responses-store", o.responses_store,
               "keep no /v1/responses responses (store is ignored; previous_response_id and GET answer 404)");
  cmd.add_option("--responses-store-max-entries", o.responses_store_max_entries,
                 "stored /v1/responses responses kept at most (least recently used evicted)")
      ->check(CLI::Range(0ll, 1ll << 30))->capture_default_str();
  cmd.add_option("--responses-store-max-bytes", o.responses_store_max_bytes,
                 "bytes of stored /v1/responses responses and conversations kept at most")
      ->check(CLI::Range(0ll, 1ll << 40))->capture_default_str();
  cmd.add_option("--responses-store-ttl", o.responses_store_ttl_s, "seconds a stored response is kept")
      ->check(CLI::Range(0.0, 1e9))->capture_default_str();
}

std::vector<std::string> api_keys(const serve_options& o) {
  std::vector<std::string> keys;
  any_list_entry(o.api_key, [&](std::string_view k) {
    keys.emplace_back(k);
    return false;
  });
  return keys;
}

namespace {

bool sagemaker_detected() {
  std::error_code ec;
  return std::getenv("SAGEMAKER_BIND_TO_PORT") != nullptr || std::filesystem::is_directory("/opt/ml/model", ec);
}

result<int> sagemaker_port() {
  const char* v = std::getenv("SAGEMAKER_BIND_TO_PORT");
  if (!v || !*v) return 8080;
  char* end = nullptr;
  long p = std::strtol(v, &end, 10);
  if (*end != '\0' || p < 1 || p > 65535)
    return fail(errc::invalid_argument, std::string("SAGEMAKER_BIND_TO_PORT is not a port: ") + v);
  return static_cast<int>(p);
}

result<void> check_ranges(const serve_options& o) {
  auto bad = [](std::string m) { return fail(errc::invalid_argument, std::move(m)); };
  if (o.port < 0 || o.port > 65535) return bad("--port must be in [0, 65535]");
  if (o.io_threads < 1 || o.io_threads > 64) return bad("--io-threads must be in [1, 64]");
  if (o.io_idle_poll_us < 0 || o.io_idle_poll_us > 100000) return bad("--io-idle-poll-us must be in [0, 100000]");
  if (o.max_num_seqs < 1) return bad("--max-num-seqs must be >= 1");
  if (o.max_num_batched_tokens < 1) return bad("--max-num-batched-tokens must be >= 1");
  if (o.max_model_len < 0) return bad("--max-model-len must be >= 0");
  if (o.block_size != 16) return bad("--block-size: this build supports 16 only");
  if (o.kv_cache_tokens < 0) return bad("--kv-cache-tokens must be >= 0");
  if (o.kv_cache_dtype != "auto" && o.kv_cache_dtype != "f32" && o.kv_cache_dtype != "f16" && o.kv_cache_dtype != "q8_0")
    return bad("--kv-cache-dtype must be auto, f32, f16 or q8_0");
  if (!(o.gpu_memory_utilization > 0.0 && o.gpu_memory_utilization <= 1.0))
    return bad("--gpu-memory-utilization must be in (0, 1]");
  if (o.max_queued_sequences < 1) return bad("--max-queued-sequences must be >= 1");
  if (o.max_sequences_per_request < 1) return bad("--max-sequences-per-request must be >= 1");
  if (o.max_queued_prompt_tokens < 1) return bad("--max-queued-prompt-tokens must be >= 1");
  if (o.max_logprobs < 0) return bad("--max-logprobs must be >= 0");
  if (!o.api_key.empty() && api_keys(o).empty()) return bad("--api-key lists no key");
  if (o.prefix_cache_salt_per_key && o.api_key.empty())
    return bad("--prefix-cache-salt-per-key needs --api-key (the keys identify the clients)");
  if (!(o.drain_timeout_s >= 0.0)) return bad("--drain-timeout must be >= 0");
  if (o.prep_threads < 0 || o.prep_threads > 256) return bad("--prep-threads must be in [0, 256]");
  if (o.max_pending_preps < 0) return bad("--max-pending-preps must be >= 0");
  if (!(o.prep_timeout_s > 0.0 && o.prep_timeout_s <= 86400.0)) return bad("--prep-timeout must be in (0, 86400]");
  if (o.max_connections < 1) return bad("--max-connections must be >= 1");
  if (o.max_buffered_request_bytes < 1) return bad("--max-buffered-request-bytes must be >= 1");
  return ok();
}

}  // namespace

result<void> resolve_serve_options(serve_options& o) {
  o.sagemaker = sagemaker_detected();
  if (o.host.empty()) o.host = o.sagemaker ? "0.0.0.0" : "127.0.0.1";
  if (o.port == -1) {
    if (o.sagemaker) {
      auto p = sagemaker_port();
      if (!p) return fail(std::move(p).error());
      o.port = *p;
    } else {
      o.port = 8080;
    }
  }
  if (o.model.empty()) {
    auto p = model::default_model_path();  // /opt/ml/model, else the bundled demo model
    if (!p) return fail(std::move(p).error());
    o.model = *p;
    if (o.served_model_name.empty())
      o.served_model_name = o.model == "/opt/ml/model" ? o.model : std::filesystem::path(o.model).stem().string();
  }
  if (o.served_model_name.empty()) o.served_model_name = o.model;
  if (o.on_device_lost.empty()) {
    const char* ns = std::getenv("NOTIFY_SOCKET");
    o.on_device_lost = ns && *ns ? "exit" : "recover";
  }
  return check_ranges(o);
}

}  // namespace vks::server
