// Route registration: each routes_*.cpp adds one family of endpoints to the router.
// Handlers capture `svc` by reference; it must outlive the I/O threads.
#pragma once

#include "http/router.hpp"
#include "server/service.hpp"

namespace vks::server {

void add_openai_routes(http::router& r, service& svc);     // /v1/chat/completions, /v1/completions, /v1/models
void add_sagemaker_routes(http::router& r, service& svc);  // /ping (GET, POST), /invocations
void add_info_routes(http::router& r, service& svc);       // /health, /version, /metrics
void add_tokenize_routes(http::router& r, service& svc);   // /tokenize, /detokenize (vLLM-style)
void add_anthropic_routes(http::router& r, service& svc);  // /v1/messages, /v1/messages/count_tokens
void add_responses_routes(http::router& r, service& svc);  // /v1/responses (+ GET/DELETE {id}, {id}/cancel)

// Every route above.
http::router make_router(service& svc);

}  // namespace vks::server
