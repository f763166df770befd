// POST /v1/completions (and /invocations with `prompt`): the job (prep worker); drive()
// then submits one engine request per prompt (each with n sequences); choices flatten to
// prompt_idx * n + seq; a text_completion response or a stream of its chunks.
#include <string>
#include <vector>

#include "api/completion_request.hpp"
#include "api/completion_response.hpp"
#include "api/structured.hpp"
#include "server/handlers.hpp"
#include "server/prompt.hpp"
#include "server/replies.hpp"

namespace vks::server {
namespace {

// max_tokens 0 (allowed with echo only): the answer is the prompt itself, so the engine is
// not involved; each choice finishes at once with reason length, like vLLM.
std::vector<tagged_event> echo_only_events(const completion_job& job) {
  std::vector<tagged_event> out;
  for (std::size_t i = 0; i < job.prompts.size(); ++i)
    for (int s = 0; s < job.req.sampling.n; ++s) {
      // Built in place: GCC 12 warns (falsely) of uninitialized members when a temporary
      // tagged_event holding the variant is moved into the vector.
      auto& te = out.emplace_back();
      te.source = static_cast<int>(i);
      auto& fe = te.ev.emplace<engine::finished_event>();
      fe.seq = s;
      fe.reason = engine::finish_reason::length;
      fe.seq_usage.n_prompt_tokens = static_cast<int>(job.prompts[i].ids.size());
    }
  return out;
}

result<completion_job> build_job(const service& svc, const model_host& host, const std::string& request_id,
                                 api::completion_request req) {
  VKS_TRY(check_model(svc, req.model));
  auto constraint = api::request_constraint(req.structured, false);
  if (!constraint) return fail(std::move(constraint).error());
  completion_job job;
  job.constraint = std::move(*constraint);
  for (const auto& in : req.prompts) {
    auto p = build_completion_prompt(host, in, req.add_special_tokens, req.truncate_prompt_tokens);
    if (!p) return fail(std::move(p).error());
    job.prompts.push_back(std::move(*p));
  }
  job.req = std::move(req);
  job.meta = api::make_meta("cmpl-", svc.served_name());
  if (!request_id.empty()) job.meta.id = "cmpl-" + request_id;
  auto& o = job.out;
  o.n_prompts = static_cast<int>(job.prompts.size());
  o.n = job.req.sampling.n;
  o.echo = job.req.echo;
  for (auto& p : job.prompts) o.prompt_texts.push_back(std::move(p.text));
  o.return_token_ids = job.req.return_token_ids;
  if (o.return_token_ids)
    for (const auto& p : job.prompts) o.prompt_token_ids.push_back(p.ids);
  o.logprobs = job.req.logprobs;
  o.options.prompt_tokens_details = host.prompt_tokens_details();
  o.prompt_logprobs = job.req.sampling.prompt_logprobs >= 0 && !job.req.echo_scores_prompt;
  // The inputs are now in prompts (ids) and out (texts): drop the copies and the schema.
  job.req.prompts = {};
  job.req.structured.reset();
  tokenize_bad_words(host, job.req.sampling);
  if (job.req.sampling.max_tokens == 0) job.preset = echo_only_events(job);
  return job;
}

}  // namespace

result<completion_job> prepare_completion(const service& svc, const api::json& body, const std::string& request_id) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  auto req = api::parse_completion_request(body, host->parse_limits());
  if (!req) return fail(std::move(req).error());
  return build_job(svc, *host, request_id, std::move(*req));
}

}  // namespace vks::server
