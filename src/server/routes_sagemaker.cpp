// The SageMaker hosting contract (contracts.md 2-3): GET/POST /ping (503 until the model is
// loaded and warm, 200 after, 503 again after an engine failure or while draining) and
// POST /invocations, dispatched by body: `messages` -> chat, `prompt` -> completions,
// `inputs` -> LMI/TGI; `requestType` session ops -> 400 (sessions are not enabled).
// X-Amzn-SageMaker-Custom-Attributes is echoed on the reply.
// In SageMaker mode no API key applies here (SageMaker authenticates callers before the
// container, and its runtime sends no key); outside it --api-key guards /invocations like
// /v1/*. A browser Origin not in --allowed-origins is refused (403) in both modes.
// /ping stays open: health checkers carry no key.
#include "api/invocations.hpp"
#include "api/json.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"
#include "server/routes.hpp"

namespace vks::server {
namespace {

const char* state_name(const service& svc) {
  if (svc.healthy()) return "healthy";
  switch (svc.state()) {
    case service_state::loading: return "loading";
    case service_state::draining: return "draining";
    default: return "unhealthy";
  }
}

bool is_custom_attributes(const std::string& v) {
  if (v.size() > 1024) return false;
  for (char c : v)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

rt::task<void> ping(service& svc, http::response_writer& w) {
  api::json body;
  body["status"] = state_name(svc);
  co_await reply_json(w, svc.healthy() ? 200 : 503, body);
}

rt::task<void> invocations(service& svc, http::request& req, http::response_writer& w) {
  svc.n_http_requests.fetch_add(1, std::memory_order_relaxed);
  const bool allowed = co_await check_access(svc, req, w, !svc.options().sagemaker);
  if (!allowed) co_return;
  // Opaque caller metadata (contracts.md: <= 1024 ASCII characters), echoed on every reply
  // to this request, errors included; anything longer or not printable ASCII is not echoed.
  if (const std::string* ca = req.header("x-amzn-sagemaker-custom-attributes"); ca && is_custom_attributes(*ca))
    w.add_header("X-Amzn-SageMaker-Custom-Attributes", *ca);
  auto body = read_json_body(req);
  if (!body) {
    co_await reply_error(svc, w, body.error());
    co_return;
  }
  if (!body->is_object()) {
    co_await reply_error(w, 400, "The request body must be a JSON object.");
    co_return;
  }
  if (body->contains("requestType")) {
    co_await reply_error(w, 400, "Stateful sessions are not enabled on this server.", "requestType");
    co_return;
  }
  // LoRA routing header: the adapter is addressed like a model name (404 unless served).
  if (const std::string* a = req.header("x-amzn-sagemaker-adapter-identifier"); a && !a->empty())
    (*body)["model"] = *a;
  auto kind = api::classify_invocation(*body);
  if (!kind) {
    co_await reply_error(svc, w, kind.error());
    co_return;
  }
  switch (*kind) {
    case api::invocation_kind::chat: co_await serve_chat(svc, req, w, *body); break;
    case api::invocation_kind::completion: co_await serve_completion(svc, req, w, *body); break;
    case api::invocation_kind::lmi: co_await serve_lmi(svc, req, w, *body); break;
  }
}

}  // namespace

void add_sagemaker_routes(http::router& r, service& svc) {
  r.get("/ping", [&svc](http::request&, http::response_writer& w) { return ping(svc, w); });
  r.post("/ping", [&svc](http::request&, http::response_writer& w) { return ping(svc, w); });
  r.post("/invocations", [&svc](http::request& req, http::response_writer& w) { return invocations(svc, req, w); });
}

}  // namespace vks::server
