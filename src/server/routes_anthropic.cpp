// The Anthropic Messages API: POST /v1/messages (a chat job in the messages format, driven
// like every other job) and POST /v1/messages/count_tokens ({"input_tokens": n}: the
// request rendered through the chat template and tokenized, as /v1/messages would).
// Both accept `?beta=true`, ignore the anthropic-version / anthropic-beta headers, take the
// key from `x-api-key` (or a bearer token) and answer errors in Anthropic's shape.
#include "api/messages_request.hpp"
#include "api/messages_response.hpp"
#include "http/response.hpp"
#include "server/handlers.hpp"
#include "server/prompt.hpp"
#include "server/replies.hpp"
#include "server/request_prep.hpp"
#include "server/routes.hpp"

namespace vks::server {
namespace {

constexpr auto shape = error_shape::anthropic;

rt::task<void> messages_route(service& svc, http::request& req, http::response_writer& w) {
  svc.n_http_requests.fetch_add(1, std::memory_order_relaxed);
  const bool allowed = co_await check_access(svc, req, w, true, shape);  // named: see check_access
  if (!allowed) co_return;
  // A named function object: GCC 12 mishandles non-trivial temporaries in co_await.
  std::function<result<generation_job>()> job = [&svc, in = take_body(req)]() -> result<generation_job> {
    auto body = decode_json_object(in);
    if (!body) return fail(std::move(body).error());
    return as_job(prepare_messages(svc, *body, in.request_id));
  };
  co_await prepare_and_serve(svc, w, cache_salt_prefix(svc, req), std::move(job), shape);
}

// On a prep worker: the answer body of count_tokens.
result<std::string> count_tokens_answer(const service& svc, const body_input& in) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  auto body = decode_json_object(in);
  if (!body) return fail(std::move(body).error());
  auto req = api::parse_messages_request(*body, host->parse_limits(), /*count_only=*/true);
  if (!req) return fail(std::move(req).error());
  VKS_TRY(check_model(svc, req->chat.model));
  auto prompt = build_chat_prompt(*host, req->chat);
  if (!prompt) return fail(std::move(prompt).error());
  api::json out;
  out["input_tokens"] = prompt->ids.size();
  return api::dump_json(out);
}

rt::task<void> count_tokens_route(service& svc, http::request& req, http::response_writer& w) {
  const bool allowed = co_await check_access(svc, req, w, true, shape);
  if (!allowed) co_return;
  w.watch_disconnect();
  auto job = [&svc, in = take_body(req)] { return count_tokens_answer(svc, in); };
  auto out = co_await svc.prep().run(std::move(job), w.disconnected());
  if (!out) {
    if (out.error().code != errc::cancelled) co_await reply_error(svc, w, out.error(), shape);
    co_return;
  }
  (void)co_await w.send(http::response::json(200, std::move(*out)));
}

}  // namespace

void add_anthropic_routes(http::router& r, service& svc) {
  r.post("/v1/messages", [&svc](http::request& req, http::response_writer& w) { return messages_route(svc, req, w); });
  r.post("/v1/messages/count_tokens",
         [&svc](http::request& req, http::response_writer& w) { return count_tokens_route(svc, req, w); });
}

}  // namespace vks::server
