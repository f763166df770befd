// Operational endpoints: GET /health (liveness JSON with the served name unless it may be a
// path: served_name_is_public; 503 once the engine failed),
// GET /version, GET /metrics (the engine's Prometheus text plus the server's counters).
#include <string>

#include "api/json.hpp"
#include "engine/metrics.hpp"
#include "http/response.hpp"
#include "server/metrics_names.hpp"
#include "server/replies.hpp"
#include "server/otlp.hpp"
#include "server/routes.hpp"

namespace vks::server {
namespace {

// The served name as a JSON string, escaped once per I/O thread: it never changes while
// serving, and health checks are the hottest route a load balancer calls.
const std::string& quoted_served_name(const service& svc) {
  thread_local std::string name, quoted;
  if (quoted.empty() || name != svc.served_name()) {
    name = svc.served_name();
    quoted = api::dump_json(api::json(name));
  }
  return quoted;
}

rt::task<void> health(service& svc, http::response_writer& w) {
  const auto st = svc.state();
  model_host* host = svc.host();
  const bool dead = st == service_state::failed || (host && !host->engine().healthy());
  const char* status = dead ? "unhealthy" : st == service_state::loading ? "loading"
                                          : st == service_state::draining ? "draining" : "ok";
  std::string body = R"({"status":")";
  body += status;
  body += '"';
  if (served_name_is_public(svc)) {  // never a filesystem path unless asked
    body += R"(,"model":)";
    body += quoted_served_name(svc);
  }
  body += '}';
  (void)co_await w.send(http::response::json(dead ? 503 : 200, std::move(body)));
}

rt::task<void> version(http::response_writer& w) {
  api::json body;
  body["version"] = VKS_VERSION;
  co_await reply_json(w, 200, body);
}

void counter(std::string& out, const char* name, const char* help, std::uint64_t v) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n";
  out += std::string(name) + " " + std::to_string(v) + "\n";
}

rt::task<void> metrics(service& svc, http::response_writer& w) {
  std::string out;
  if (model_host* host = svc.host()) {
    auto& eng = host->engine();
    out = engine::render_prometheus(eng.metrics(), eng.stats(), svc.served_name());
    out += cache_config_info(svc.options().block_size, eng.metrics().kv_blocks_total.load(std::memory_order_relaxed));
    out += republish_metrics(out, svc.options().metrics_prefix);  // --metrics-prefix (engine series only)
  }
  const auto rd = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  counter(out, "vkserve:http_generation_requests_total", "Generation requests received over HTTP.",
          rd(svc.n_http_requests));
  counter(out, "vkserve:client_disconnects_total", "Generations aborted because the client went away.",
          rd(svc.n_client_disconnects));
  counter(out, "vkserve:rejected_overload_total", "Requests answered 429 by admission control.",
          rd(svc.n_rejected_overload));
  counter(out, "vkserve:unauthorized_total", "Requests answered 401.", rd(svc.n_unauthorized));
  const prep_pool& prep = svc.prep();
  counter(out, "vkserve:prep_rejected_total", "Requests answered 503: the preparation queue was full.",
          prep.n_rejected());
  counter(out, "vkserve:prep_timeouts_total", "Requests answered 503: not prepared within --prep-timeout.",
          prep.n_timed_out());
  counter(out, "vkserve:prep_withdrawn_total", "Queued preparations dropped because the client went away.",
          prep.n_withdrawn());
  out += "# HELP vkserve:prep_queued Requests waiting for a preparation thread.\n# TYPE vkserve:prep_queued gauge\n";
  out += "vkserve:prep_queued " + std::to_string(prep.n_queued()) + "\n";
  out += "# HELP vkserve:prep_running Requests being prepared.\n# TYPE vkserve:prep_running gauge\n";
  out += "vkserve:prep_running " + std::to_string(prep.n_running()) + "\n";
  if (const http::server_budget* b = svc.http_budget) {
    out += "# HELP vkserve:http_open_connections Open connections, all ports and I/O threads (--max-connections).\n"
           "# TYPE vkserve:http_open_connections gauge\n";
    out += "vkserve:http_open_connections " + std::to_string(b->n_connections()) + "\n";
    out += "# HELP vkserve:http_buffered_request_bytes Request bytes held in memory (--max-buffered-request-bytes).\n"
           "# TYPE vkserve:http_buffered_request_bytes gauge\n";
    out += "vkserve:http_buffered_request_bytes " + std::to_string(b->n_buffered_bytes()) + "\n";
  }
  if (const trace_exporter* t = active_trace_exporter()) {
    counter(out, "vkserve:otlp_spans_exported_total", "Request spans the OTLP collector accepted.", t->n_exported());
    counter(out, "vkserve:otlp_spans_dropped_total",
            "Request spans dropped: the export queue was full or the collector failed.", t->n_dropped());
  }
  if (session_registry* reg = svc.sessions()) {
    out += "# HELP vkserve:sagemaker_sessions Open SageMaker stateful sessions.\n# TYPE vkserve:sagemaker_sessions gauge\n";
    out += "vkserve:sagemaker_sessions " + std::to_string(reg->size()) + "\n";
    if (model_host* host = svc.host()) {
      out += "# HELP vkserve:kv_blocks_pinned KV cache blocks pinned by SageMaker sessions.\n"
             "# TYPE vkserve:kv_blocks_pinned gauge\n";
      out += "vkserve:kv_blocks_pinned " + std::to_string(host->engine().n_pinned_blocks()) + "\n";
    }
  }
  out += "# HELP vkserve:ready 1 when the model is loaded, warm and healthy.\n# TYPE vkserve:ready gauge\n";
  out += std::string("vkserve:ready ") + (svc.healthy() ? "1" : "0") + "\n";
  http::response r;
  r.status = 200;
  r.headers.add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
  r.body = std::move(out);
  (void)co_await w.send(std::move(r));
}

}  // namespace

void add_info_routes(http::router& r, service& svc) {
  r.get("/health", [&svc](http::request&, http::response_writer& w) { return health(svc, w); });
  r.get("/version", [](http::request&, http::response_writer& w) { return version(w); });
  r.get("/metrics", [&svc](http::request&, http::response_writer& w) { return metrics(svc, w); });
}

}  // namespace vks::server
