// WebSocket opening handshake (see ws_handshake.hpp).
#include "http/ws_handshake.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <array>

#include "http/errors.hpp"

namespace vks::http {

namespace {
constexpr std::string_view k_ws_guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A Sec-WebSocket-Key must be the base64 of 16 bytes: 22 base64 characters and "==".
bool valid_client_key(std::string_view k) noexcept {
  if (k.size() != 24 || k.substr(22) != "==") return false;
  for (char c : k.substr(0, 22)) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!ok) return false;
  }
  return true;
}
}  // namespace

std::string ws_accept_key(std::string_view client_key) {
  std::string input(trim(client_key));
  input += k_ws_guid;
  std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest.data());
  std::array<unsigned char, 4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1> b64{};
  int n = EVP_EncodeBlock(b64.data(), digest.data(), static_cast<int>(digest.size()));
  return std::string(reinterpret_cast<const char*>(b64.data()), static_cast<std::size_t>(n));
}

bool is_ws_upgrade(const request& req) { return req.headers.has_token("upgrade", "websocket"); }

ws_handshake check_ws_handshake(const request& req) {
  ws_handshake h;
  auto reject = [&](int status, std::string_view why) {
    h.reject = error_response(status, why);
    return h;
  };
  if (req.method != method::get) {
    h.reject = error_response(405, "WebSocket upgrades use GET");
    h.reject.headers.add("Allow", "GET");
    return h;
  }
  if (req.version_minor < 1) return reject(400, "WebSocket needs HTTP/1.1");
  if (!is_ws_upgrade(req)) return reject(400, "expected `Upgrade: websocket`");
  if (!req.headers.has_token("connection", "upgrade")) return reject(400, "expected `Connection: Upgrade`");
  const std::string* version = req.header("sec-websocket-version");
  if (!version || trim(*version) != "13") {
    h.reject = error_response(400, "unsupported Sec-WebSocket-Version (only 13)");
    h.reject.headers.add("Sec-WebSocket-Version", "13");
    return h;
  }
  const std::string* key = req.header("sec-websocket-key");
  if (!key || !valid_client_key(trim(*key))) return reject(400, "missing or invalid Sec-WebSocket-Key");
  header_list out;
  out.add("Upgrade", "websocket");
  out.add("Connection", "Upgrade");
  out.add("Sec-WebSocket-Accept", ws_accept_key(*key));
  h.accept = std::move(out);
  return h;
}

}  // namespace vks::http
