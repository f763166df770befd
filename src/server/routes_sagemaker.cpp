// The SageMaker hosting contract (contracts.md 2-3): GET/POST /ping (503 until the model is
// loaded and warm, 200 after, 503 again after an engine failure or while draining) and
// POST /invocations (decoded and prepared on a prep worker), dispatched by body: `messages` -> chat, `prompt` -> completions,
// `inputs` -> LMI/TGI; `requestType` session ops -> 400 (sessions are not enabled).
// X-Amzn-SageMaker-Custom-Attributes is echoed on the reply.
// In SageMaker mode no API key applies here (SageMaker authenticates callers before the
// container, and its runtime sends no key); outside it --api-key guards /invocations like
// /v1/*. A browser Origin not in --allowed-origins is refused (403) in both modes.
// /ping stays open: health checkers carry no key.
#include "api/json.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"
#include "server/request_prep.hpp"
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

// On a prep worker: decode, then dispatch by body to the chat, completion or LMI job.
result<generation_job> prepare_invocation(const service& svc, const body_input& in, const std::string& adapter) {
  auto body = decode_json_object(in);
  if (!body) return fail(std::move(body).error());
  if (body->contains("requestType"))
    return fail(errc::invalid_argument, "Stateful sessions are not enabled on this server.", "requestType");
  // LoRA routing header: the adapter is addressed like a model name (404 unless served).
  if (!adapter.empty()) (*body)["model"] = adapter;
  return prepare_generation(svc, *body, in.request_id);
}

rt::task<void> invocations(service& svc, http::request& req, http::response_writer& w) {
  svc.n_http_requests.fetch_add(1, std::memory_order_relaxed);
  const bool allowed = co_await check_access(svc, req, w, !svc.options().sagemaker);
  if (!allowed) co_return;
  // Opaque caller metadata (contracts.md: <= 1024 ASCII characters), echoed on every reply
  // to this request, errors included; anything longer or not printable ASCII is not echoed.
  if (const std::string* ca = req.header("x-amzn-sagemaker-custom-attributes"); ca && is_custom_attributes(*ca))
    w.add_header("X-Amzn-SageMaker-Custom-Attributes", *ca);
  std::string adapter;
  if (const std::string* a = req.header("x-amzn-sagemaker-adapter-identifier")) adapter = *a;
  // A named function object: GCC 12 mishandles non-trivial temporaries in co_await.
  std::function<result<generation_job>()> job = [&svc, in = take_body(req), adapter]() {
    return prepare_invocation(svc, in, adapter);
  };
  co_await prepare_and_serve(svc, w, cache_salt_prefix(svc, req), std::move(job));
}

}  // namespace

void add_sagemaker_routes(http::router& r, service& svc) {
  r.get("/ping", [&svc](http::request&, http::response_writer& w) { return ping(svc, w); });
  r.post("/ping", [&svc](http::request&, http::response_writer& w) { return ping(svc, w); });
  r.post("/invocations", [&svc](http::request& req, http::response_writer& w) { return invocations(svc, req, w); });
}

}  // namespace vks::server
