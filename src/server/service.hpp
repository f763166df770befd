// service: the state every route handler shares. The HTTP server starts before the model
// is loaded (so /ping can answer 503 meanwhile); the main thread publishes the loaded
// model_host once it is warm (release store) and handlers read it (acquire load): nullptr
// means "not ready". The host outlives every I/O thread (cmd_serve joins them first).
// Thread-safety: all members are immutable after start-up, atomic, or (the prep pool)
// internally synchronized.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "http/budget.hpp"
#include "server/model_host.hpp"
#include "server/prep_pool.hpp"
#include "server/response_store.hpp"
#include "server/sagemaker_sessions.hpp"
#include "server/serve_options.hpp"

namespace vks::server {

enum class service_state { loading, ready, failed, draining };

class service {
 public:
  explicit service(serve_options o)
      : opts_(std::move(o)),
        api_keys_(server::api_keys(opts_)),
        prep_(prep_options_for(opts_)),
        responses_(response_store_limits_for(opts_)),
        sessions_(session_limits_for(opts_), [this](std::uint64_t key) {
          if (auto* h = host()) h->engine().release_session(key);
        }) {}

  const serve_options& options() const noexcept { return opts_; }
  // The keys of --api-key (empty: no authentication); a key's index identifies its client.
  const std::vector<std::string>& api_keys() const noexcept { return api_keys_; }
  const std::string& served_name() const noexcept { return opts_.served_model_name; }

  // The loaded, warmed-up model, or nullptr while loading / after a load failure.
  model_host* host() const noexcept { return host_.load(std::memory_order_acquire); }
  void publish(model_host* h) noexcept {
    host_.store(h, std::memory_order_release);
    state_.store(service_state::ready);
  }
  service_state state() const noexcept { return state_.load(); }
  void set_state(service_state s) noexcept { state_.store(s); }
  // Ready for /ping: loaded, warm, engine healthy, not draining.
  bool healthy() const noexcept {
    auto* h = host();
    return h && state() == service_state::ready && h->engine().healthy();
  }

  // Where handlers prepare requests (thread-safe). Shut it down (joins its workers) before
  // the model_host goes: a running preparation reads the model.
  prep_pool& prep() noexcept { return prep_; }

  // The Responses API store, or nullptr with --no-responses-store. Internally synchronized,
  // so const handlers (prep workers) may write to it.
  response_store* responses() const noexcept { return opts_.responses_store ? &responses_ : nullptr; }

  // SageMaker stateful sessions, or nullptr unless --sagemaker-sessions. Thread-safe.
  session_registry* sessions() noexcept { return opts_.sagemaker_sessions ? &sessions_ : nullptr; }

  // Server-side counters (the engine keeps its own): for /metrics.
  std::atomic<std::uint64_t> n_http_requests{0};
  std::atomic<std::uint64_t> n_client_disconnects{0};  // generation aborted by a gone client
  std::atomic<std::uint64_t> n_rejected_overload{0};   // 429 answers
  std::atomic<std::uint64_t> n_unauthorized{0};        // 401 answers
  std::int64_t started_unix = 0;                         // for /v1/models `created`
  const http::server_budget* http_budget = nullptr;      // for /metrics; set by serve, outlives it

 private:
  static prep_options prep_options_for(const serve_options& o) {
    prep_options p;
    p.n_threads = o.prep_threads > 0 ? o.prep_threads : default_prep_threads();
    p.max_pending = o.max_pending_preps;
    p.timeout = std::chrono::milliseconds(static_cast<long long>(o.prep_timeout_s * 1000.0));
    return p;
  }

  static response_store_limits response_store_limits_for(const serve_options& o) {
    response_store_limits l;
    l.max_entries = static_cast<std::size_t>(o.responses_store_max_entries);
    l.max_bytes = static_cast<std::size_t>(o.responses_store_max_bytes);
    l.ttl = std::chrono::seconds(static_cast<long long>(o.responses_store_ttl_s));
    return l;
  }

  static session_limits session_limits_for(const serve_options& o) {
    session_limits l;
    l.ttl = std::chrono::seconds(static_cast<long long>(o.sagemaker_sessions_ttl_s));
    l.max_sessions = static_cast<std::size_t>(o.sagemaker_max_sessions);
    return l;
  }

  serve_options opts_;
  std::vector<std::string> api_keys_;
  prep_pool prep_;
  mutable response_store responses_;
  std::atomic<model_host*> host_{nullptr};
  std::atomic<service_state> state_{service_state::loading};
  session_registry sessions_;  // after host_: its release callback reads it
};

}  // namespace vks::server
