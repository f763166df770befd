// One parsed HTTP/1.x request: method, target, headers (names lower-cased), the whole body,
// and the connection semantics the parser derived. Path parameters are filled by the
// router. Owned by the connection coroutine for the duration of its handler.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/headers.hpp"

namespace vks::http {

enum class method : std::uint8_t { get, head, post, put, del, options, patch, other };

std::string_view to_string(method m) noexcept;
// "GET" -> method::get; anything unknown -> method::other.
method method_from_string(std::string_view s) noexcept;

struct request {
  http::method method = method::get;
  std::string method_name;  // as sent, e.g. "GET"
  std::string target;       // raw request-target, e.g. "/v1/models?x=1"
  int version_minor = 1;    // HTTP/1.<version_minor>
  header_list headers;      // names lower-cased
  std::string body;         // decoded (de-chunked) body
  bool keep_alive = true;   // the connection may carry another request after this one
  bool expect_continue = false;  // `Expect: 100-continue` was sent
  bool upgrade = false;          // `Connection: upgrade` + `Upgrade` (WebSocket later)
  std::vector<std::pair<std::string, std::string>> params;  // router path parameters

  // Target up to '?' / the part after it ("" if none).
  std::string_view path() const noexcept;
  std::string_view query() const noexcept;
  // Value of path parameter `name` ("" if absent).
  std::string_view param(std::string_view name) const noexcept;
  const std::string* header(std::string_view name) const noexcept { return headers.find(name); }
};

}  // namespace vks::http
