// The OpenAI Responses API: POST /v1/responses (a chat job in the responses format, driven
// like every other job), GET and DELETE /v1/responses/{id} over the bounded response store,
// and POST /v1/responses/{id}/cancel (only background responses can be cancelled, and this
// server runs none in the background: a stored response answers 400, an unknown one 404).
#include "api/errors.hpp"
#include "http/response.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"
#include "server/request_prep.hpp"
#include "server/routes.hpp"

namespace vks::server {
namespace {

rt::task<void> create_route(service& svc, http::request& req, http::response_writer& w) {
  svc.n_http_requests.fetch_add(1, std::memory_order_relaxed);
  const bool allowed = co_await check_access(svc, req, w);  // named: see check_access
  if (!allowed) co_return;
  // A named function object: GCC 12 mishandles non-trivial temporaries in co_await.
  std::function<result<generation_job>()> job = [&svc, in = take_body(req)]() -> result<generation_job> {
    auto body = decode_json_object(in);
    if (!body) return fail(std::move(body).error());
    return as_job(prepare_responses(svc, *body, in.request_id));
  };
  co_await prepare_and_serve(svc, w, cache_salt_prefix(svc, req), std::move(job));
}

vks::error not_found(const std::string& id) {
  return make_error(errc::not_found, "Response with id '" + id + "' not found.", "response_id");
}

enum class action { get, del, cancel };

rt::task<void> stored_route(service& svc, http::request& req, http::response_writer& w, action a) {
  const bool allowed = co_await check_access(svc, req, w);
  if (!allowed) co_return;
  const std::string id(req.param("id"));
  response_store* store = svc.responses();
  if (a == action::del) {
    if (!store || !store->erase(id)) {
      co_await reply_error(svc, w, not_found(id));
      co_return;
    }
    api::json deleted;  // named: GCC 12 and initializer-list temporaries in co_await
    deleted["id"] = id;
    deleted["object"] = "response";
    deleted["deleted"] = true;
    co_await reply_json(w, 200, deleted);
    co_return;
  }
  auto e = store ? store->get(id) : std::nullopt;
  if (!e) {
    co_await reply_error(svc, w, not_found(id));
    co_return;
  }
  if (a == action::cancel) {
    const vks::error refused = make_error(errc::invalid_argument,
                                          "Only background responses can be cancelled; this response has already finished.",
                                          "response_id");
    co_await reply_error(svc, w, refused);
    co_return;
  }
  co_await reply_json(w, 200, e->response);
}

}  // namespace

void add_responses_routes(http::router& r, service& svc) {
  r.post("/v1/responses", [&svc](http::request& req, http::response_writer& w) { return create_route(svc, req, w); });
  r.get("/v1/responses/{id}",
        [&svc](http::request& req, http::response_writer& w) { return stored_route(svc, req, w, action::get); });
  r.add(http::method::del, "/v1/responses/{id}",
        [&svc](http::request& req, http::response_writer& w) { return stored_route(svc, req, w, action::del); });
  r.post("/v1/responses/{id}/cancel",
         [&svc](http::request& req, http::response_writer& w) { return stored_route(svc, req, w, action::cancel); });
}

}  // namespace vks::server
