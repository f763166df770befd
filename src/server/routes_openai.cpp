// The OpenAI API under /v1: Origin and bearer auth (check_access) on the loop, JSON body
// decoding and the generation handlers' preparation on a prep worker, then generation;
// and the model list.
#include "api/errors.hpp"
#include "api/json.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"
#include "server/request_prep.hpp"
#include "server/routes.hpp"

namespace vks::server {
namespace {

using prepare_fn = result<generation_job> (*)(const service&, const api::json&, const std::string&);

result<generation_job> prepare_chat_job(const service& svc, const api::json& body, const std::string& rid) {
  return as_job(prepare_chat(svc, body, rid));
}
result<generation_job> prepare_embeddings_job(const service& svc, const api::json& body, const std::string& rid) {
  return as_job(prepare_embeddings(svc, body, rid));
}
result<generation_job> prepare_completion_job(const service& svc, const api::json& body, const std::string& rid) {
  return as_job(prepare_completion(svc, body, rid));
}

// Auth on the loop; decoding, validation and prompt building on a prep worker.
rt::task<void> json_route(service& svc, http::request& req, http::response_writer& w, prepare_fn prepare) {
  svc.n_http_requests.fetch_add(1, std::memory_order_relaxed);
  const bool allowed = co_await check_access(svc, req, w);  // named: see check_access
  if (!allowed) co_return;
  // A named function object: GCC 12 mishandles non-trivial temporaries in co_await.
  std::function<result<generation_job>()> job = [&svc, in = take_body(req), prepare]() -> result<generation_job> {
    auto body = decode_json_object(in);
    if (!body) return fail(std::move(body).error());
    return prepare(svc, *body, in.request_id);
  };
  co_await prepare_and_serve(svc, w, cache_salt_prefix(svc, req), std::move(job));
}

api::json model_card(const service& svc) {
  model_host* host = svc.host();
  api::json card;
  card["id"] = svc.served_name();
  card["object"] = "model";
  card["created"] = svc.started_unix;
  card["owned_by"] = "vkserve";
  // The filesystem path only when the operator asks (--expose-model-path): it tells a caller
  // about the host's layout and is of no use to a client.
  card["root"] = svc.options().expose_model_path ? svc.options().model : svc.served_name();
  card["parent"] = nullptr;
  card["max_model_len"] = host ? api::json(host->n_ctx()) : api::json(nullptr);
  return card;
}

rt::task<void> list_models(service& svc, http::request& req, http::response_writer& w) {
  const bool allowed = co_await check_access(svc, req, w);
  if (!allowed) co_return;
  api::json body;
  body["object"] = "list";
  body["data"] = api::json::array({model_card(svc)});
  co_await reply_json(w, 200, body);
}

rt::task<void> get_model(service& svc, http::request& req, http::response_writer& w) {
  const bool allowed = co_await check_access(svc, req, w);
  if (!allowed) co_return;
  if (req.param("id") != svc.served_name()) {
    co_await reply_error(svc, w, api::model_not_found(req.param("id")));
    co_return;
  }
  co_await reply_json(w, 200, model_card(svc));
}

}  // namespace

void add_openai_routes(http::router& r, service& svc) {
  r.post("/v1/chat/completions",
         [&svc](http::request& req, http::response_writer& w) { return json_route(svc, req, w, &prepare_chat_job); });
  r.post("/v1/completions",
         [&svc](http::request& req, http::response_writer& w) { return json_route(svc, req, w, &prepare_completion_job); });
  r.post("/v1/embeddings",
         [&svc](http::request& req, http::response_writer& w) { return json_route(svc, req, w, &prepare_embeddings_job); });
  r.get("/v1/models", [&svc](http::request& req, http::response_writer& w) { return list_models(svc, req, w); });
  r.get("/v1/models/{id...}", [&svc](http::request& req, http::response_writer& w) { return get_model(svc, req, w); });
}

}  // namespace vks::server
