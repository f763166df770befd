// POST /v1/responses (OpenAI Responses API): the body is translated into this turn's chat
// messages (api/responses_request), the stored conversation of previous_response_id goes
// in front (instructions first), and the chat steps (make_chat_job) prepare the job, which
// answers in the responses format and is stored when it completes. Prep worker side.
#include <string>

#include "api/responses_request.hpp"
#include "base/log.hpp"
#include "base/log_throttle.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"

namespace vks::server {

result<chat_job> prepare_responses(const service& svc, const api::json& body, const std::string& request_id) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  auto req = api::parse_responses_request(body, host->parse_limits());
  if (!req) return fail(std::move(req).error());
  if (!req->ignored_tools.empty()) {
    thread_local log_throttle throttle{std::chrono::seconds(60)};
    if (throttle.allow())
      log::warn("/v1/responses: ignoring {} tool(s) of types this server does not run (first: {})",
                req->ignored_tools.size(), req->ignored_tools.front());
  }
  auto ctx = std::make_shared<responses_context>();
  ctx->conversation = api::json::array();
  if (!req->previous_response_id.empty()) {
    response_store* store = svc.responses();
    auto prev = store ? store->get(req->previous_response_id) : std::nullopt;
    if (!prev)
      return fail(errc::not_found, "Previous response with id '" + req->previous_response_id + "' not found.",
                  "previous_response_id");
    ctx->conversation = std::move(prev->conversation);
  }
  for (auto& m : req->input_messages) ctx->conversation.push_back(std::move(m));
  api::chat_request& chat = req->chat;
  chat.messages = api::json::array();
  if (req->instructions) chat.messages.push_back({{"role", "system"}, {"content", *req->instructions}});
  for (const auto& m : ctx->conversation) chat.messages.push_back(m);
  ctx->echo = std::move(req->echo);
  ctx->store = req->store ? svc.responses() : nullptr;
  auto job = make_chat_job(svc, std::move(chat), "resp_", request_id);
  if (!job) return fail(std::move(job).error());
  job->format = chat_format::responses;
  job->responses = std::move(ctx);
  return job;
}

}  // namespace vks::server
