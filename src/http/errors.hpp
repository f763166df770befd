// JSON error bodies in the OpenAI shape for every error the HTTP server generates itself:
// {"error":{"message":..., "type":..., "param":null, "code":<HTTP status int>}}.
// `code` is the HTTP status as an integer (vLLM's convention); `type` is the vLLM/openai
// error class name for the status (BadRequestError, NotFoundError, ...).
#pragma once

#include <string>
#include <string_view>

#include "base/error_type.hpp"
#include "http/response.hpp"

namespace vks::http {

// The error type name of a status: the one table in base/error_type.hpp.
using vks::error_type;
// The JSON text of an error body. `param` empty -> null.
std::string error_json(int status, std::string_view message, std::string_view param = {});
// A complete JSON error response.
response error_response(int status, std::string_view message, std::string_view param = {});

}  // namespace vks::http
