// vLLM-style POST /tokenize ({"prompt"} or chat {"messages", ...} rendered through the chat
// template; -> {"count", "max_model_len", "tokens", "token_strs"}) and POST /detokenize
// ({"tokens"} -> {"prompt"}). Same auth rule as /v1 (guarded when --api-key is set).
#include <cstdint>
#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/fields.hpp"
#include "api/json.hpp"
#include "server/prompt.hpp"
#include "server/replies.hpp"
#include "server/routes.hpp"

namespace vks::server {
namespace {

result<std::vector<std::int32_t>> tokenize_body(service& svc, model_host& host, const api::json& body,
                                                bool& token_strs) {
  api::fields f(body);
  std::string model;
  f.string("model", model);
  f.boolean("return_token_strs", token_strs);
  if (!f.ok()) return fail(f.error());
  VKS_TRY(check_model(svc, model));
  if (body.contains("messages")) {
    auto req = api::parse_chat_request(body);
    if (!req) return fail(std::move(req).error());
    auto p = build_chat_prompt(host, *req);
    if (!p) return fail(std::move(p).error());
    return std::move(p->ids);
  }
  std::string prompt;
  bool add_special = true;
  f.string("prompt", prompt);
  f.boolean("add_special_tokens", add_special);
  if (!f.ok()) return fail(f.error());
  if (!body.contains("prompt")) return fail(errc::invalid_argument, "Either `prompt` or `messages` is required.", "prompt");
  return host.tokenizer().encode(prompt, add_special, /*parse_special=*/true);
}

rt::task<void> tokenize(service& svc, http::request& req, http::response_writer& w) {
  const bool allowed = co_await check_access(svc, req, w);
  if (!allowed) co_return;
  model_host* host = svc.host();
  if (!host) {
    co_await reply_error(svc, w, not_ready_error(svc));
    co_return;
  }
  auto body = read_json_body(req);
  if (!body || !body->is_object()) {
    co_await reply_error(svc, w, body ? make_error(errc::invalid_argument, "The request body must be a JSON object.")
                                      : body.error());
    co_return;
  }
  bool want_strs = false;
  auto ids = tokenize_body(svc, *host, *body, want_strs);
  if (!ids) {
    co_await reply_error(svc, w, ids.error());
    co_return;
  }
  api::json out;
  out["count"] = ids->size();
  out["max_model_len"] = host->n_ctx();
  out["tokens"] = *ids;
  if (want_strs) {
    api::json strs = api::json::array();
    for (auto id : *ids) strs.push_back(host->tokenizer().token_piece(id));
    out["token_strs"] = std::move(strs);
  } else {
    out["token_strs"] = nullptr;
  }
  co_await reply_json(w, 200, out);
}

rt::task<void> detokenize(service& svc, http::request& req, http::response_writer& w) {
  const bool allowed = co_await check_access(svc, req, w);
  if (!allowed) co_return;
  model_host* host = svc.host();
  if (!host) {
    co_await reply_error(svc, w, not_ready_error(svc));
    co_return;
  }
  auto body = read_json_body(req);
  if (!body || !body->is_object()) {
    co_await reply_error(svc, w, body ? make_error(errc::invalid_argument, "The request body must be a JSON object.")
                                      : body.error());
    co_return;
  }
  api::fields f(*body);
  std::string model;
  std::vector<std::int32_t> ids;
  f.string("model", model);
  f.int_list("tokens", ids, 0, host->tokenizer().n_vocab() - 1);
  if (f.ok() && !body->contains("tokens")) f.fail("tokens", "`tokens` is required.");
  if (!f.ok()) {
    co_await reply_error(svc, w, f.error());
    co_return;
  }
  if (auto m = check_model(svc, model); !m) {
    co_await reply_error(svc, w, m.error());
    co_return;
  }
  api::json out;
  out["prompt"] = host->tokenizer().decode(ids, /*skip_special=*/false);
  co_await reply_json(w, 200, out);
}

}  // namespace

void add_tokenize_routes(http::router& r, service& svc) {
  r.post("/tokenize", [&svc](http::request& req, http::response_writer& w) { return tokenize(svc, req, w); });
  r.post("/detokenize", [&svc](http::request& req, http::response_writer& w) { return detokenize(svc, req, w); });
}

}  // namespace vks::server
