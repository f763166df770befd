// POST /v1/embeddings: the job (prep worker): parse, model and pooling checks, tokenize each
// text input (with the model's special tokens, as its pooling was trained), bound the inputs
// by the context and --max-sequences-per-request. drive() submits one engine request per
// input; the embedding job_output answers with the vectors in input order.
#include <string>
#include <vector>

#include "api/embedding_request.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"

namespace vks::server {

result<embedding_job> prepare_embeddings(const service& svc, const api::json& body, const std::string& request_id) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  const auto limits = host->parse_limits();
  auto req = api::parse_embedding_request(body, limits.n_vocab);
  if (!req) return fail(std::move(req).error());
  VKS_TRY(check_model(svc, req->model));
  auto pooling = host->embedding_pooling();
  if (!pooling) return fail(std::move(pooling).error());
  const int width = host->n_embd();
  if (req->dimensions && *req->dimensions > width)
    return fail(errc::invalid_argument,
                "dimensions " + std::to_string(*req->dimensions) + " exceeds the model's embedding width " + std::to_string(width),
                "dimensions");
  if (req->inputs.size() > static_cast<std::size_t>(limits.max_seqs_per_request))
    return fail(errc::invalid_argument,
                std::to_string(req->inputs.size()) + " inputs exceed --max-sequences-per-request " +
                    std::to_string(limits.max_seqs_per_request),
                "input");
  embedding_job job;
  job.pooling = *pooling;
  job.id = "embd-" + (request_id.empty() ? api::make_meta("", svc.served_name()).id : request_id);
  for (std::size_t i = 0; i < req->inputs.size(); ++i) {
    auto& in = req->inputs[i];
    auto ids = in.text ? host->tokenizer().encode(*in.text, true) : std::move(in.ids);
    if (ids.empty()) return fail(errc::invalid_argument, "input[" + std::to_string(i) + "] has no tokens", "input");
    if (static_cast<int>(ids.size()) > limits.max_model_len)
      return fail(errc::invalid_argument,
                  "input[" + std::to_string(i) + "] has " + std::to_string(ids.size()) + " tokens; the model's context is " +
                      std::to_string(limits.max_model_len),
                  "input");
    job.prompts.push_back(std::move(ids));
  }
  auto& o = job.out;
  o.model = svc.served_name();
  o.encoding = req->encoding;
  o.dimensions = req->dimensions;
  o.normalize = req->normalize;
  o.n_inputs = static_cast<int>(job.prompts.size());
  return job;
}

}  // namespace vks::server
