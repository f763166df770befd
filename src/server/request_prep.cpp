// Taking the body, decoding it on a prep worker, dispatching by body, serving jobs over HTTP.
#include "server/request_prep.hpp"

#include <utility>
#include <variant>

#include "api/invocations.hpp"
#include "server/drive.hpp"
#include "server/http_sink.hpp"
#include "server/job_output.hpp"
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

result<generation_job> prepare_generation(const service& svc, const api::json& body, const std::string& request_id) {
  auto kind = api::classify_invocation(body);
  if (!kind) return fail(std::move(kind).error());
  switch (*kind) {
    case api::invocation_kind::chat: return as_job(prepare_chat(svc, body, request_id));
    case api::invocation_kind::completion: return as_job(prepare_completion(svc, body, request_id));
    case api::invocation_kind::lmi: return as_job(prepare_lmi(svc, body));
  }
  return fail(errc::internal, "unknown invocation kind");
}

namespace {

// serve_job with the request's trace context (otlp.hpp; nullptr: none).
rt::task<void> serve_traced(service& svc, http::response_writer& w, generation_job& job, const std::string& salt_prefix,
                            std::uint64_t session, const trace_info* trace) {
  using framing = http_sink::framing;
  const framing f = !job_streams(job)       ? framing::json
                    : job_json_lines(job)   ? framing::json_lines
                    : job_typed_events(job) ? framing::sse_typed
                                            : framing::sse;
  http_sink sink(svc, w, f, job_error_shape(job));
  co_await drive(svc, job, sink, salt_prefix, session, trace);
}

}  // namespace

rt::task<void> serve_job(service& svc, http::response_writer& w, generation_job& job, const std::string& salt_prefix,
                         std::uint64_t session) {
  co_await serve_traced(svc, w, job, salt_prefix, session, nullptr);
}

rt::task<void> prepare_and_serve(service& svc, http::response_writer& w, std::string salt_prefix,
                                 std::function<result<generation_job>()> prepare, error_shape shape,
                                 std::uint64_t session) {
  // Tracing (otlp.hpp): the request's arrival and W3C traceparent, taken on the loop.
  trace_info trace;
  if (active_trace_exporter() != nullptr) {
    trace.start_ns = unix_now_ns();
    if (const std::string* tp = w.req().header("traceparent")) trace.parent = parse_traceparent(*tp);
  }
  w.watch_disconnect();
  auto job = co_await svc.prep().run(std::move(prepare), w.disconnected());
  if (!job) {
    if (job.error().code != errc::cancelled) co_await reply_error(svc, w, job.error(), shape);
    co_return;
  }
  co_await serve_traced(svc, w, *job, salt_prefix, session, &trace);
}

}  // namespace vks::server
