// POST /v1/chat/completions (and /invocations with `messages`): parse and validate, render
// the chat template and build the job (prep worker); drive() then submits one engine
// request (n sequences) and answers a chat.completion or chat.completion.chunk events.
#include <string>

#include "api/chat_request.hpp"
#include "api/chat_response.hpp"
#include "api/structured.hpp"
#include "server/handlers.hpp"
#include "server/prompt.hpp"
#include "server/replies.hpp"

namespace vks::server {
namespace {

// What the reply and the engine no longer need once the prompt and constraint exist: the
// message tree (about the body's size, or more), tools, template, schema, rendered text.
void drop_inputs(chat_job& job) {
  job.req.messages = api::json();
  job.req.tools = api::json();
  job.req.chat_template_kwargs = api::json();
  job.req.chat_template.reset();
  job.req.structured.reset();
  job.prompt.text = std::string();
  job.prompt.last_content = std::string();
}

}  // namespace

// Everything before submission; errors are returned, not answered.
result<chat_job> prepare_chat(const service& svc, const api::json& body, const std::string& request_id) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  auto req = api::parse_chat_request(body, host->parse_limits());
  if (!req) return fail(std::move(req).error());
  return make_chat_job(svc, std::move(*req), "chatcmpl-", request_id);
}

result<chat_job> make_chat_job(const service& svc, api::chat_request req, std::string_view id_prefix,
                               const std::string& request_id) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  VKS_TRY(check_model(svc, req.model));
  auto prompt = build_chat_prompt(*host, req);
  if (!prompt) return fail(std::move(prompt).error());
  auto constraint = chat_constraint(*host, req, *prompt);
  if (!constraint) return fail(std::move(constraint).error());
  chat_job job{std::move(req), std::move(*prompt), {}, {}, std::move(*constraint)};
  job.meta = api::make_meta(id_prefix, svc.served_name());
  if (!request_id.empty()) job.meta.id = std::string(id_prefix) + request_id;
  job.out = chat_output(*host, job.req, job.prompt);
  if (reply_needs_special_tokens(job.out)) job.req.sampling.skip_special_tokens = false;
  tokenize_bad_words(*host, job.req.sampling);
  drop_inputs(job);
  return job;
}

}  // namespace vks::server
