// Buffered HTTP responses and their wire form. serialize() writes the status line, the
// handler's headers, Content-Length (or nothing for 1xx/204/304), Connection when it
// differs from the protocol default, and the body unless the request was HEAD.
#pragma once

#include <string>
#include <string_view>

#include "http/headers.hpp"

namespace vks::http {

// Reason phrase for a status code ("Unknown" for codes we never send).
std::string_view reason_phrase(int status) noexcept;

struct response {
  int status = 200;
  header_list headers;
  std::string body;

  // A response with `Content-Type: application/json`.
  static response json(int status, std::string body);
  // A response with `Content-Type: text/plain; charset=utf-8`.
  static response text(int status, std::string body);
};

// How the connection frames the response.
struct framing {
  bool head = false;        // answer to HEAD: headers only (Content-Length still stated)
  bool keep_alive = true;   // false -> `Connection: close`
  int version_minor = 1;    // HTTP/1.0 peers get `Connection: keep-alive` when kept
};

// Appends the response's bytes to `out`.
void serialize(const response& r, const framing& f, std::string& out);
// Appends a status line and headers only (for streamed bodies: the caller adds
// Transfer-Encoding or closes the connection to delimit the body).
void serialize_head(int status, const header_list& headers, const framing& f, std::string& out);

// `Date:` value for now (IMF-fixdate), cached per second per thread.
std::string_view http_date();

}  // namespace vks::http
