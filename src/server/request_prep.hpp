// The route side of request preparation: what a handler takes from the HTTP request on the
// loop (the body, moved out so the connection no longer holds it, and the few headers the
// job needs), the JSON decoding a prep worker does with it, and how a route runs a
// preparation on the service's prep_pool and then serves the job it made.
// take_body/prepare_and_serve: loop thread; decode_json_object: any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "api/json.hpp"
#include "base/result.hpp"
#include "http/request.hpp"
#include "http/writer.hpp"
#include "rt/task.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"
#include "server/service.hpp"

namespace vks::server {

struct body_input {
  std::string body;
  std::string content_type;  // "" when absent
  std::string request_id;    // client_request_id(): X-Request-Id or ""
};

// Moves the body out of `req` (its buffer is freed when the preparation ends).
body_input take_body(http::request& req);

// Content-Type check and JSON decoding (400 with vLLM's wording), then the body must be an
// object (400 "The request body must be a JSON object.").
result<api::json> decode_json_object(const body_input& in);

// Watches for the client leaving, runs `prepare` on a prep worker and answers its error,
// or serves the job. A client gone meanwhile gets nothing (its job is withdrawn or dropped).
// `salt_prefix`: cache_salt_prefix of the HTTP request (replies.hpp); `shape`: the error
// body of a preparation that failed (the job's own answers pick theirs from its format);
// `session`: the engine key of a SageMaker session the job runs in (0 = none).
rt::task<void> prepare_and_serve(service& svc, http::response_writer& w, std::string salt_prefix,
                                 std::function<result<generation_job>()> prepare,
                                 error_shape shape = error_shape::openai, std::uint64_t session = 0);

// Wraps a typed job into the variant (for prepare lambdas).
template <class J>
result<generation_job> as_job(result<J> j) {
  if (!j) return fail(std::move(j).error());
  return generation_job(std::move(*j));
}

}  // namespace vks::server
