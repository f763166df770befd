// The generation handlers shared by the OpenAI routes and SageMaker /invocations: each
// takes an already decoded JSON body, validates it, submits to the engine and answers
// (JSON, SSE or JSON lines). Client disconnects abort the engine requests at once.
// Loop thread only; `svc` outlives the I/O threads.
#pragma once

#include "api/json.hpp"
#include "http/request.hpp"
#include "http/writer.hpp"
#include "rt/task.hpp"
#include "server/service.hpp"

namespace vks::server {

rt::task<void> serve_chat(service& svc, const http::request& req, http::response_writer& w, const api::json& body);
rt::task<void> serve_completion(service& svc, const http::request& req, http::response_writer& w,
                                const api::json& body);
rt::task<void> serve_lmi(service& svc, const http::request& req, http::response_writer& w, const api::json& body);

}  // namespace vks::server
