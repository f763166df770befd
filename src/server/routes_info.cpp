// Operational endpoints: GET /health (liveness JSON; 503 once the engine failed),
// GET /version, GET /metrics (the engine's Prometheus text plus the server's counters).
#include <string>

#include "api/json.hpp"
#include "engine/metrics.hpp"
#include "http/response.hpp"
#include "server/replies.hpp"
#include "server/routes.hpp"

namespace vks::server {
namespace {

rt::task<void> health(service& svc, http::response_writer& w) {
  api::json body;
  const auto st = svc.state();
  model_host* host = svc.host();
  const bool dead = st == service_state::failed || (host && !host->engine().healthy());
  body["status"] = dead ? "unhealthy" : st == service_state::loading ? "loading"
                                      : st == service_state::draining ? "draining" : "ok";
  body["model"] = svc.served_name();
  co_await reply_json(w, dead ? 503 : 200, body);
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
  }
  const auto rd = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  counter(out, "vkserve:http_generation_requests_total", "Generation requests received over HTTP.",
          rd(svc.n_http_requests));
  counter(out, "vkserve:client_disconnects_total", "Generations aborted because the client went away.",
          rd(svc.n_client_disconnects));
  counter(out, "vkserve:rejected_overload_total", "Requests answered 429 by admission control.",
          rd(svc.n_rejected_overload));
  counter(out, "vkserve:unauthorized_total", "Requests answered 401.", rd(svc.n_unauthorized));
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
