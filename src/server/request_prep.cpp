// Taking the body, decoding it on a prep worker, and dispatching prepared jobs.
#include "server/request_prep.hpp"

#include <utility>
#include <variant>

#include "server/replies.hpp"

namespace vks::server {

body_input take_body(http::request& req) {
  body_input in;
  in.body = std::move(req.body);
  req.body = std::string();
  if (const std::string* ct = req.header("content-type")) in.content_type = *ct;
  in.request_id = client_request_id(req);
  return in;
}

result<api::json> decode_json_object(const body_input& in) {
  auto body = read_json_body(in.content_type, in.body);
  if (!body) return fail(std::move(body).error());
  if (!body->is_object()) return fail(errc::invalid_argument, "The request body must be a JSON object.");
  return body;
}

rt::task<void> serve_job(service& svc, http::response_writer& w, generation_job& job, const std::string& salt_prefix) {
  if (auto* c = std::get_if<chat_job>(&job)) co_await serve_chat(svc, w, *c, salt_prefix);
  else if (auto* p = std::get_if<completion_job>(&job)) co_await serve_completion(svc, w, *p, salt_prefix);
  else co_await serve_lmi(svc, w, std::get<lmi_job>(job), salt_prefix);
}

rt::task<void> prepare_and_serve(service& svc, http::response_writer& w, std::string salt_prefix,
                                 std::function<result<generation_job>()> prepare) {
  w.watch_disconnect();
  auto job = co_await svc.prep().run(std::move(prepare), w.disconnected());
  if (!job) {
    if (job.error().code != errc::cancelled) co_await reply_error(svc, w, job.error());
    co_return;
  }
  co_await serve_job(svc, w, *job, salt_prefix);
}

}  // namespace vks::server
