// vLLM-style POST /tokenize ({"prompt"} or chat {"messages", ...} rendered through the chat
// template; -> {"count", "max_model_len", "tokens", "token_strs"}) and POST /detokenize
// ({"tokens"} -> {"prompt"}). Same auth rule as /v1 (guarded when --api-key is set).
// Decoding, tokenizing and building the answer run on a prep worker.
#include <cstdint>
#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/fields.hpp"
#include "api/json.hpp"
#include "server/prompt.hpp"
#include "http/response.hpp"
#include "server/replies.hpp"
#include "server/request_prep.hpp"
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

// On a prep worker: the whole answer body of /tokenize.
result<std::string> tokenize_answer(service& svc, model_host& host, const body_input& in) {
  auto body = decode_json_object(in);
  if (!body) return fail(std::move(body).error());
  bool want_strs = false;
  auto ids = tokenize_body(svc, host, *body, want_strs);
  if (!ids) return fail(std::move(ids).error());
  api::json out;
  out["count"] = ids->size();
  out["max_model_len"] = host.n_ctx();
  out["tokens"] = *ids;
  if (want_strs) {
    api::json strs = api::json::array();
    for (auto id : *ids) strs.push_back(host.tokenizer().token_piece(id));
    out["token_strs"] = std::move(strs);
  } else {
    out["token_strs"] = nullptr;
  }
  return api::dump_json(out);
}

// On a prep worker: the whole answer body of /detokenize.
result<std::string> detokenize_answer(service& svc, model_host& host, const body_input& in) {
  auto body = decode_json_object(in);
  if (!body) return fail(std::move(body).error());
  api::fields f(*body);
  std::string model;
  std::vector<std::int32_t> ids;
  f.string("model", model);
  f.int_list("tokens", ids, 0, host.tokenizer().n_vocab() - 1);
  if (f.ok() && !body->contains("tokens")) f.fail("tokens", "`tokens` is required.");
  if (!f.ok()) return fail(f.error());
  VKS_TRY(check_model(svc, model));
  api::json out;
  out["prompt"] = host.tokenizer().decode(ids, /*skip_special=*/false);
  return api::dump_json(out);
}

using answer_fn = result<std::string> (*)(service&, model_host&, const body_input&);

// Access checks and readiness on the loop; everything else on a prep worker.
rt::task<void> text_route(service& svc, http::request& req, http::response_writer& w, answer_fn answer) {
  const bool allowed = co_await check_access(svc, req, w);  // named: see check_access
  if (!allowed) co_return;
  model_host* host = svc.host();
  if (!host) {
    co_await reply_error(svc, w, not_ready_error(svc));
    co_return;
  }
  w.watch_disconnect();
  // A named function object: GCC 12 mishandles non-trivial temporaries in co_await.
  auto job = [&svc, host, in = take_body(req), answer] { return answer(svc, *host, in); };
  auto out = co_await svc.prep().run(std::move(job), w.disconnected());
  if (!out) {
    if (out.error().code != errc::cancelled) co_await reply_error(svc, w, out.error());
    co_return;
  }
  (void)co_await w.send(http::response::json(200, std::move(*out)));
}

}  // namespace

void add_tokenize_routes(http::router& r, service& svc) {
  r.post("/tokenize",
         [&svc](http::request& req, http::response_writer& w) { return text_route(svc, req, w, &tokenize_answer); });
  r.post("/detokenize",
         [&svc](http::request& req, http::response_writer& w) { return text_route(svc, req, w, &detokenize_answer); });
}

}  // namespace vks::server
