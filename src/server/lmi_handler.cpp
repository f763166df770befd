// /invocations with the LMI/TGI schema ({"inputs", "parameters", "stream"}): one prompt,
// n = 1; {"generated_text"} JSON or, when streaming, application/jsonlines with one
// {"token": ...} object per line (DJL's default formatter; contracts.md 3.6).
#include <string>

#include "api/completion_request.hpp"
#include "api/lmi_response.hpp"
#include "server/handlers.hpp"
#include "server/prompt.hpp"
#include "server/replies.hpp"

namespace vks::server {

result<lmi_job> prepare_lmi(const service& svc, const api::json& body) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  auto req = api::parse_lmi_request(body, host->parse_limits());
  if (!req) return fail(std::move(req).error());
  VKS_TRY(check_model(svc, req->completion.model));
  lmi_job job;
  auto er = build_lmi_request(*host, *req, job.out);
  if (!er) return fail(std::move(er).error());
  job.er = std::move(*er);
  job.stream = req->completion.stream.stream;
  return job;
}

}  // namespace vks::server
