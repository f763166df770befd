// The one place where vks::error becomes an HTTP status and an OpenAI error object.
// Shape (vLLM's current one): {"error": {"message", "type", "param", "code"}} where code
// is the HTTP status integer and type is the vLLM/Stainless-style class name
// (BadRequestError, NotFoundError, ...). The same object is the payload of a stream
// error event (`data: {"error": ...}` then `data: [DONE]`).
#pragma once

#include <string>
#include <string_view>

#include "api/json.hpp"
#include "base/error_type.hpp"
#include "base/error.hpp"

namespace vks::api {

// invalid_argument, parse, context_overflow -> 400; not_found -> 404; overloaded -> 429;
// unsupported -> 501; shutting_down, device_lost -> 503; timeout -> 504;
// cancelled -> 499 (client closed: never sent, for logs); io, out_of_memory, internal -> 500.
int http_status(errc c) noexcept;
// The error type name of a status: the one table in base/error_type.hpp.
using vks::error_type;

json error_object(const vks::error& e);                          // status from e.code
json error_object(int status, std::string_view message, std::string_view param = {});
std::string error_body(const vks::error& e);                      // dump_json(error_object)

// Common errors with vLLM's wording.
vks::error model_not_found(std::string_view model);              // 404 "The model `X` does not exist."
vks::error invalid_json(std::string_view detail);                // 400 "JSON decode error: ..."

}  // namespace vks::api
