// Expected failures as values: an error code, a message for humans, and the request
// parameter it concerns (if any). The API edge (src/api/errors.cpp) maps errc to HTTP
// status and OpenAI error JSON in exactly one place; nothing below it knows about HTTP.
#pragma once

#include <string>
#include <string_view>

namespace vks {

enum class errc {
  invalid_argument,   // bad user input (400)
  not_found,          // unknown model/route/file (404)
  unsupported,        // valid but not implemented by us (501 at the API, exit 1 in CLI)
  parse,              // malformed file or payload
  io,                 // filesystem/socket error (errno in the message)
  out_of_memory,      // host or device allocation failed
  context_overflow,   // prompt + max_tokens exceed the model context (400)
  overloaded,         // admission control refused (429)
  shutting_down,      // draining (503)
  cancelled,          // aborted by the client or by shutdown
  timeout,            // deadline passed
  device_lost,        // GPU fault; the engine is unusable (503)
  internal,           // broken invariant caught at run time (500)
};

std::string_view to_string(errc c) noexcept;

struct error {
  errc code = errc::internal;
  std::string message;
  std::string param;  // request field the error concerns, "" if none
};

inline error make_error(errc c, std::string msg, std::string param = {}) {
  return error{c, std::move(msg), std::move(param)};
}

}  // namespace vks
