// The SageMaker hosting contract (contracts.md 2-3): GET/POST /ping (503 until the model is
// loaded and warm, 200 after, 503 again after an engine failure or while draining) and
// POST /invocations (decoded and prepared on a prep worker), dispatched by body: `messages` -> chat, `prompt` -> completions,
// `inputs` -> LMI/TGI; `requestType` session ops (NEW_SESSION, CLOSE) -> the stateful
// sessions of sagemaker_sessions.hpp (400 unless --sagemaker-sessions), answered on the loop
// (a session-op body is small; larger ones are refused). X-Amzn-SageMaker-Session-Id
// routes a request into its session (NEW_SESSION: a new one, announced on the reply).
// X-Amzn-SageMaker-Custom-Attributes is echoed on the reply.
// In SageMaker mode no API key applies here (SageMaker authenticates callers before the
// container, and its runtime sends no key); outside it --api-key guards /invocations like
// /v1/*. A browser Origin not in --allowed-origins is refused (403) in both modes.
// /ping stays open: health checkers carry no key.
#include <optional>

#include "api/json.hpp"
#include "base/log.hpp"
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
  if (auto* reg = svc.sessions()) reg->sweep();  // SageMaker polls /ping: expiry needs no traffic
  api::json body;
  body["status"] = state_name(svc);
  co_await reply_json(w, svc.healthy() ? 200 : 503, body);
}

// A body that is a session operation ({"requestType": ...}, small enough to decode on the
// loop), or nullopt: everything else goes to a prep worker.
std::optional<api::json> session_op_body(const body_input& in) {
  constexpr std::size_t k_max_session_op_bytes = 64 * 1024;
  if (in.body.size() > k_max_session_op_bytes || in.body.find("requestType") == std::string::npos) return std::nullopt;
  auto body = decode_json_object(in);
  if (!body || !body->contains("requestType")) return std::nullopt;
  return std::move(*body);
}

// NEW_SESSION / CLOSE, answered as the AWS container standards do: 200 with a text body and
// the session header; 424 when the session cannot be made or closed; 400 for anything else.
rt::task<void> session_op(service& svc, http::response_writer& w, const api::json& body, const std::string* sid) {
  session_registry* reg = svc.sessions();
  if (reg == nullptr) {
    co_await reply_error(w, 400, "Stateful sessions are not enabled on this server.", "requestType");
    co_return;
  }
  const api::json& type = body["requestType"];
  if (type == "NEW_SESSION") {
    auto c = reg->create();
    if (!c) {
      co_await reply_error(w, 424, "Failed to create session: " + c.error().message);
      co_return;
    }
    log::info("session {} created", c->id);
    w.add_header("X-Amzn-SageMaker-New-Session-Id", c->header);
    (void)co_await w.send(http::response::text(200, "Session " + c->id + " created"));
  } else if (type == "CLOSE") {
    if (sid == nullptr || sid->empty()) {
      co_await reply_error(w, 424, "Failed to close session: the request carries no X-Amzn-SageMaker-Session-Id");
      co_return;
    }
    if (auto r = reg->close(*sid); !r) {
      co_await reply_error(w, 424, "Failed to close session: " + r.error().message);
      co_return;
    }
    log::info("session {} closed", *sid);
    w.add_header("X-Amzn-SageMaker-Closed-Session-Id", *sid);
    (void)co_await w.send(http::response::text(200, "Session " + *sid + " closed"));
  } else {
    co_await reply_error(w, 400, "requestType must be \"NEW_SESSION\" or \"CLOSE\".", "requestType");
  }
}

// The engine key of the session a request names in X-Amzn-SageMaker-Session-Id: 0 when it
// names none; NEW_SESSION creates one (announced on the reply); an unknown or expired id,
// or the header while sessions are off, is an error (400).
result<std::uint64_t> session_of(service& svc, http::response_writer& w, const std::string* sid) {
  if (sid == nullptr) return std::uint64_t{0};
  session_registry* reg = svc.sessions();
  if (reg == nullptr)
    return fail(errc::invalid_argument,
                "Invalid payload. stateful sessions not enabled, X-Amzn-SageMaker-Session-Id header not supported");
  if (*sid == "NEW_SESSION") {
    auto c = reg->create();
    if (!c) return fail(errc::invalid_argument, "Failed to create session: " + c.error().message);
    log::info("session {} created", c->id);
    w.add_header("X-Amzn-SageMaker-New-Session-Id", c->header);
    return c->key;
  }
  auto key = reg->find(*sid);
  if (!key) return fail(errc::invalid_argument, "Bad request: " + key.error().message);
  return *key;
}

// On a prep worker: decode, then dispatch by body to the chat, completion or LMI job.
result<generation_job> prepare_invocation(const service& svc, const body_input& in, const std::string& adapter) {
  auto body = decode_json_object(in);
  if (!body) return fail(std::move(body).error());
  if (body->contains("requestType"))  // small session ops were answered on the loop
    return fail(errc::invalid_argument,
                svc.options().sagemaker_sessions ? "A session request (requestType) must be a JSON object of at most 64 KiB."
                                                 : "Stateful sessions are not enabled on this server.",
                "requestType");
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
  body_input in = take_body(req);
  const std::string* sid = req.header("x-amzn-sagemaker-session-id");
  if (std::optional<api::json> op = session_op_body(in)) {
    co_await session_op(svc, w, *op, sid);
    co_return;
  }
  const result<std::uint64_t> session = session_of(svc, w, sid);
  if (!session) {
    co_await reply_error(w, 400, session.error().message);
    co_return;
  }
  std::string adapter;
  if (const std::string* a = req.header("x-amzn-sagemaker-adapter-identifier")) adapter = *a;
  // A named function object: GCC 12 mishandles non-trivial temporaries in co_await.
  std::function<result<generation_job>()> job = [&svc, in = std::move(in), adapter]() {
    return prepare_invocation(svc, in, adapter);
  };
  co_await prepare_and_serve(svc, w, cache_salt_prefix(svc, req), std::move(job), error_shape::openai, *session);
}

}  // namespace

void add_sagemaker_routes(http::router& r, service& svc) {
  r.get("/ping", [&svc](http::request&, http::response_writer& w) { return ping(svc, w); });
  r.post("/ping", [&svc](http::request&, http::response_writer& w) { return ping(svc, w); });
  r.post("/invocations", [&svc](http::request& req, http::response_writer& w) { return invocations(svc, req, w); });
}

}  // namespace vks::server
