// Wiring of the bidirectional-streaming WebSocket endpoints (contracts.md section 4.2):
//   - main port: GET `path` (default /invocations-bidirectional-stream, SageMaker's GA
//     contract) and any sub-path below it;
//   - a dedicated port (default 8081, the private-beta contract `ws://local:8081/<path>`,
//     default path invoke-bidi-stream): every GET path upgrades, since SageMaker passes the
//     client's ModelInvocationPath through unchanged.
// The upgrade URL's query string becomes per-connection request defaults
// (parse_session_query); a malformed one refuses the upgrade with 400.
// Access, checked before the handshake on both ports: a browser Origin not in
// --allowed-origins -> 403; with --api-key, the key (Authorization: Bearer, or the
// subprotocol entry `bearer.<key>` for browsers, which cannot set headers) -> else 401.
// The subprotocol `vkserve` is selected when offered (else the `bearer.` entry is echoed).
// Options are read once at start-up; the routers are then read-only (any I/O thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>

#include "base/result.hpp"
#include "http/router.hpp"
#include "http/server.hpp"
#include "http/websocket.hpp"
#include "rt/loop.hpp"
#include "rt/task.hpp"
#include "server/service.hpp"

namespace vks::server {

struct bidi_options {
  std::string path = "/invocations-bidirectional-stream";  // main-port route ("" = none)
  // Dedicated WebSocket port; 0 = any free port; -1 = off; -2 (default) = 8081 in SageMaker
  // mode, off otherwise (resolve_bidi_port).
  int port = k_port_auto;
  static constexpr int k_port_auto = -2;
  http::ws_options ws;             // frame/message limits, timeouts
};

// --bidi-path, --bidi-port, --bidi-max-message-bytes, --bidi-idle-timeout,
// --bidi-assembly-timeout.
void add_bidi_options(CLI::App& cmd, bidi_options& o);

// Resolves the automatic port: 8081 in SageMaker mode, -1 (off) otherwise.
void resolve_bidi_port(bidi_options& o, bool sagemaker);

// Adds the main-port routes (GET o.path and o.path/{rest...}). `svc` and `o` must outlive r.
void add_bidi_routes(http::router& r, service& svc, const bidi_options& o);

// The dedicated port: its listening socket and catch-all router. Thread-safe to serve()
// from several I/O threads at once (they share the socket, like the main port).
// SAGEMAKER_SAFE_PORT_RANGE ("LOW-HIGH", inclusive, 1..65535, LOW <= HIGH; spaces
// allowed around the numbers). nullopt when the text is not such a range.
std::optional<std::pair<int, int>> parse_port_range(std::string_view text);

class bidi_port {
 public:
  // Binds host:o.port (nullptr when o.port < 0). Auxiliary ports must fall inside
  // `safe_range` (SageMaker's SAGEMAKER_SAFE_PORT_RANGE, when set): if o.port is outside
  // it, the first port of the range that binds is used instead. Errors: errc::io (bind
  // failed, or no port of the range binds).
  static result<std::unique_ptr<bidi_port>> open(service& svc, const bidi_options& o, const std::string& host,
                                                  std::optional<std::pair<int, int>> safe_range = std::nullopt);
  ~bidi_port();
  bidi_port(const bidi_port&) = delete;
  bidi_port& operator=(const bidi_port&) = delete;
  std::uint16_t port() const noexcept { return port_; }
  int fd() const noexcept { return fd_; }
  const http::router& routes() const noexcept { return routes_; }

 private:
  bidi_port() = default;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  http::router routes_;
};

// The I/O thread body with the bidi port: http::serve on the main socket and, when `bidi`
// is non-null, on the bidi socket, concurrently on `lp`; returns when both have drained.
rt::task<void> serve_main_and_bidi(rt::loop& lp, int listen_fd, const http::router& routes,
                                   const http::server_options& hopts, const bidi_port* bidi);

}  // namespace vks::server
