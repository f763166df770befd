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

rt::task<void> reply_json(http::response_writer& w, int status, const api::json& body);
rt::task<void> reply_error(service& svc, http::response_writer& w, const vks::error& e);
rt::task<void> reply_error(http::response_writer& w, int status, std::string_view message,
                           std::string_view param = {});

// 503 error while the model is loading or after a fatal engine error / during drain.
vks::error not_ready_error(const service& svc);

// 401 for a missing or wrong `Authorization: Bearer` key (counted in the metrics).
rt::task<void> reply_unauthorized(service& svc, http::response_writer& w);

// Content-Type check + JSON decoding (400 with vLLM's wording on failure). Any thread.
result<api::json> read_json_body(std::string_view content_type, std::string_view body);
result<api::json> read_json_body(const http::request& req);

// "" or the served name -> ok (anything with --skip-model-name-validation); else 404
// "The model `X` does not exist."
result<void> check_model(const service& svc, const std::string& model);

// True when no key is configured or `Authorization: Bearer <key>` matches one of the
// --api-key keys (constant time).
bool authorized(const service& svc, const http::request& req);

// Index in svc.api_keys() of the key the request's bearer token matches; -1 if none.
int api_key_index(const service& svc, const http::request& req);

// The caller's part of the prefix-cache salt (generation mixes it into every engine
// request's cache_salt): with --prefix-cache-salt-per-key, an identity of the API key the
// request authenticated with (its index, not the key), so clients with different keys
// never share cached blocks; "" otherwise (or when the request carries no valid key).
std::string cache_salt_prefix(const service& svc, const http::request& req);

// `X-Request-Id` (printable ASCII, <= 128 bytes) or "" when absent/unusable.
std::string client_request_id(const http::request& req);

}  // namespace vks::server
