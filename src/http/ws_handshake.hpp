// The WebSocket opening handshake (RFC 6455 section 4.2) on the server side: recognising an
// upgrade request, validating it, and computing the 101 answer (Sec-WebSocket-Accept is
// base64(SHA-1(key + GUID)), via OpenSSL). Subprotocols and extensions are never selected
// (no permessage-deflate: frames with RSV bits are a protocol error). Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "http/headers.hpp"
#include "http/request.hpp"
#include "http/response.hpp"

namespace vks::http {

// Sec-WebSocket-Accept for the client's Sec-WebSocket-Key (as sent, surrounding blanks trimmed).
std::string ws_accept_key(std::string_view client_key);

// True when the request asks for a WebSocket upgrade (`Upgrade: websocket`).
bool is_ws_upgrade(const request& req);

// Either the headers of the 101 answer (Upgrade, Connection, Sec-WebSocket-Accept), or the
// response refusing the upgrade: 405 for a method other than GET, 400 (OpenAI-shaped JSON)
// for HTTP/1.0, missing/invalid Upgrade, Connection or Sec-WebSocket-Key, and 400 with
// `Sec-WebSocket-Version: 13` for another version (RFC 6455 4.4).
struct ws_handshake {
  std::optional<header_list> accept;
  response reject;
};
ws_handshake check_ws_handshake(const request& req);

}  // namespace vks::http
