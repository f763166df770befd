// How route handlers answer with JSON: success bodies, OpenAI error objects for vks::error
// values (status from api::http_status; 429 adds Retry-After), and the checks shared by
// the generation routes (model ready, JSON body, model name, bearer auth).
// Loop thread only (they use the connection's response_writer); the checks that take no
// writer are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "api/json.hpp"
#include "base/error.hpp"
#include "base/result.hpp"
#include "http/request.hpp"
#include "http/writer.hpp"
#include "rt/task.hpp"
#include "server/service.hpp"

namespace vks::server {

// The error body shape of a route: OpenAI's {"error": {...}} or Anthropic's
// {"type": "error", "error": {"type", "message"}} (/v1/messages).
enum class error_shape { openai, anthropic };

rt::task<void> reply_json(http::response_writer& w, int status, const api::json& body);
rt::task<void> reply_error(service& svc, http::response_writer& w, const vks::error& e,
                           error_shape shape = error_shape::openai);
rt::task<void> reply_error(http::response_writer& w, int status, std::string_view message,
                           std::string_view param = {});

// 503 error while the model is loading or after a fatal engine error / during drain.
vks::error not_ready_error(const service& svc);

// 401 for a missing or wrong `Authorization: Bearer` key (counted in the metrics).
rt::task<void> reply_unauthorized(service& svc, http::response_writer& w);

// Content-Type check + JSON decoding (400 with vLLM's wording on failure). Any thread.
result<api::json> read_json_body(std::string_view content_type, std::string_view body);

// "" or the served name -> ok (anything with --skip-model-name-validation); else 404
// "The model `X` does not exist."
result<void> check_model(const service& svc, const std::string& model);

// True when no key is configured or the request carries one of the --api-key keys
// (constant time): `Authorization: Bearer <key>`, `x-api-key: <key>` (Anthropic's header), or on a WebSocket upgrade (browsers
// cannot set headers on one) the subprotocol entry `bearer.<key>` in Sec-WebSocket-Protocol.
bool authorized(const service& svc, const http::request& req);

// Index in svc.api_keys() of the key the request carries (as for authorized()); -1 if none.
int api_key_index(const service& svc, const http::request& req);

// The caller's part of the prefix-cache salt (generation mixes it into every engine
// request's cache_salt): with --prefix-cache-salt-per-key, an identity of the API key the
// request authenticated with (its index, not the key), so clients with different keys
// never share cached blocks; "" otherwise (or when the request carries no valid key).
std::string cache_salt_prefix(const service& svc, const http::request& req);

// True when the request carries no `Origin` (not a browser) or one listed in
// --allowed-origins (exact, case-insensitive; `*` allows any). Browsers send Origin on
// WebSocket upgrades and on cross-origin (and same-origin POST) requests, so this refuses
// what a web page the user visits would send to a local server.
bool origin_allowed(const service& svc, const http::request& req);

// 403 for a browser Origin that is not allowed.
rt::task<void> reply_forbidden_origin(http::response_writer& w);

// The access checks of an API route, in order: Origin (403), then the key (401) when
// `needs_key`. Answers the refusal and returns false, or returns true. Store the result in a
// named variable before testing it: GCC 12 miscompiled `if (!co_await check_access(...))`
// followed by another co_await (the I/O thread hung).
rt::task<bool> check_access(service& svc, const http::request& req, http::response_writer& w,
                            bool needs_key = true, error_shape shape = error_shape::openai);

// Whether open routes (/health) may name the served model: with --expose-model-path, or
// when the served name is not the --model string (which, by vLLM's default, it is when
// --served-model-name is not given: then it may be a filesystem path).
bool served_name_is_public(const service& svc);

// `X-Request-Id` (printable ASCII, <= 128 bytes) or "" when absent/unusable.
std::string client_request_id(const http::request& req);

}  // namespace vks::server
