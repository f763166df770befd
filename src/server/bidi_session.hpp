// The application protocol of the bidirectional-streaming WebSocket (SageMaker
// InvokeEndpointWithBidirectionalStream, contracts.md section 4): every client message
// (text or binary frame, UTF-8 JSON) is one request in the chat-completions, completions
// or LMI `inputs` schema (the /invocations dispatch). Replies, per request, in order:
//   stream: one text frame per chunk, exactly the SSE chunk JSON, then a frame `[DONE]`;
//   LMI stream: one frame per {"token": ...} line, then `[DONE]`;
//   non-stream: one frame with the whole response.
// A request's `id` (string or number) is removed from the body and becomes the response /
// chunk `id` (and the `id` of its error frame). Requests queue and run one at a time; at
// most 64 wait behind the running one (more: an error frame each, type RateLimitError).
// {"type":"cancel"} (optionally with the `id` of the running request) aborts the request in
// flight: its stream ends with the chunks the abort produces, then `[DONE]`. Closing the
// connection aborts it too. A bad message answers an OpenAI error object frame
// ({"error": {...}}) and the connection stays open.
// Loop thread only; `svc` outlives the connection.
#pragma once

#include <string>
#include <string_view>

#include "api/json.hpp"
#include "base/result.hpp"
#include "http/websocket.hpp"
#include "rt/task.hpp"
#include "server/service.hpp"

namespace vks::server {

// Per-connection request defaults from the upgrade URL's query string (SageMaker's
// ModelQueryString, <= 2048 bytes): `k=v(&k=v)*`, values percent-decoded; integers and
// decimals become numbers, true/false booleans, anything else a string. A key present in
// a request body wins. Errors (invalid_argument): too long, empty or malformed pairs.
result<api::json> parse_session_query(std::string_view query);

// Serves one connection until it ends (see above). `defaults` from parse_session_query;
// `salt_prefix`: cache_salt_prefix of the upgrade request (replies.hpp).
rt::task<void> run_bidi_session(service& svc, api::json defaults, http::ws_connection& c, std::string salt_prefix = {});

}  // namespace vks::server
