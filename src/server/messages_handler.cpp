// POST /v1/messages (Anthropic Messages API): the body is translated into a chat request
// (api/messages_request) and prepared by the chat steps (make_chat_job); the job answers
// in the messages format (job_output.hpp). Prep worker side.
#include <string>

#include "api/messages_request.hpp"
#include "base/log.hpp"
#include "base/log_throttle.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"

namespace vks::server {

result<chat_job> prepare_messages(const service& svc, const api::json& body, const std::string& request_id) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  auto req = api::parse_messages_request(body, host->parse_limits());
  if (!req) return fail(std::move(req).error());
  if (!req->ignored_tools.empty()) {
    thread_local log_throttle throttle{std::chrono::seconds(60)};
    if (throttle.allow())
      log::warn("/v1/messages: ignoring {} server tool(s) this server cannot run (first: {})",
                req->ignored_tools.size(), req->ignored_tools.front());
  }
  auto job = make_chat_job(svc, std::move(req->chat), "msg_", request_id);
  if (!job) return fail(std::move(job).error());
  job->format = chat_format::messages;
  return job;
}

}  // namespace vks::server
