// Bidirectional-streaming endpoints (see bidi.hpp): options, routes, the second listener.
#include "server/bidi.hpp"

#include <unistd.h>

#include "base/log.hpp"
#include "http/errors.hpp"
#include "rt/net.hpp"
#include "rt/scope.hpp"
#include "server/bidi_session.hpp"
#include "server/comma_list.hpp"
#include "server/replies.hpp"

namespace vks::server {
namespace {

// The subprotocol the 101 answer selects: `vkserve` when offered, else the `bearer.` entry
// that carried the key (a browser fails the connection if none of its offers is selected).
std::string select_protocol(const http::request& req) {
  const std::string* p = req.header("sec-websocket-protocol");
  if (!p) return {};
  std::string_view bearer;
  const bool ours = any_list_entry(*p, [&](std::string_view e) {
    if (bearer.empty() && e.starts_with("bearer.")) bearer = e;
    return e == "vkserve";
  });
  return ours ? std::string("vkserve") : std::string(bearer);
}

// GET handler: access checks, query -> session defaults, then the WebSocket handshake and
// the session.
rt::task<void> serve_upgrade(service& svc, const bidi_options& o, http::request& req, http::response_writer& w) {
  const bool allowed = co_await check_access(svc, req, w);
  if (!allowed) co_return;
  auto defaults = parse_session_query(req.query());
  if (!defaults) {
    w.close_after();
    (void)co_await w.send(http::error_response(400, defaults.error().message));
    co_return;
  }
  api::json d = std::move(*defaults);
  std::string salt = cache_salt_prefix(svc, req);
  const std::string protocol = select_protocol(req);
  co_await http::accept_websocket(
      req, w, o.ws, [&svc, &d, &salt](http::ws_connection& c) { return run_bidi_session(svc, d, c, salt); },
      protocol);
}

http::handler upgrade_handler(service& svc, const bidi_options& o) {
  return [&svc, &o](http::request& req, http::response_writer& w) { return serve_upgrade(svc, o, req, w); };
}

}  // namespace

void add_bidi_options(CLI::App& cmd, bidi_options& o) {
  cmd.add_option("--bidi-path", o.path,
                 "WebSocket path on the main port (default /invocations-bidirectional-stream; \"\" = none)");
  cmd.add_option("--bidi-port", o.port,
                 "dedicated WebSocket port, every path (default: 8081 in SageMaker mode, else off; "
                 "0 = any free port; -1 = off)");
  cmd.add_option("--bidi-max-message-bytes", o.ws.max_message_bytes,
                 "largest WebSocket message accepted (default 16 MiB; larger: close 1009)");
  cmd.add_option_function<double>(
      "--bidi-idle-timeout",
      [&o](double s) { o.ws.idle_timeout = std::chrono::milliseconds(static_cast<long long>(s * 1000.0)); },
      "close (1001) a WebSocket that received and sent nothing for this many seconds (default 600; 0 = never)");
  cmd.add_option_function<double>(
      "--bidi-assembly-timeout",
      [&o](double s) { o.ws.assembly_timeout = std::chrono::milliseconds(static_cast<long long>(s * 1000.0)); },
      "close (1008) a WebSocket whose message (or frame) is not completed within this many seconds "
      "(default 30; 0 = never)");
}

void resolve_bidi_port(bidi_options& o, bool sagemaker) {
  if (o.port == bidi_options::k_port_auto) o.port = sagemaker ? 8081 : -1;
}

void add_bidi_routes(http::router& r, service& svc, const bidi_options& o) {
  if (o.path.empty()) return;
  std::string base = o.path.front() == '/' ? o.path : "/" + o.path;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  r.get(base, upgrade_handler(svc, o));
  r.get(base + "/{rest...}", upgrade_handler(svc, o));
}

std::optional<std::pair<int, int>> parse_port_range(std::string_view text) {
  auto number = [&](std::string_view t) -> std::optional<int> {
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    if (t.empty() || t.size() > 5) return std::nullopt;
    int v = 0;
    for (char c : t) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + (c - '0');
    }
    if (v < 1 || v > 65535) return std::nullopt;
    return v;
  };
  const auto dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto lo = number(text.substr(0, dash));
  auto hi = number(text.substr(dash + 1));
  if (!lo || !hi || *lo > *hi) return std::nullopt;
  return std::pair{*lo, *hi};
}

result<std::unique_ptr<bidi_port>> bidi_port::open(service& svc, const bidi_options& o, const std::string& host,
                                                   std::optional<std::pair<int, int>> safe_range) {
  if (o.port < 0) return std::unique_ptr<bidi_port>{};
  if (o.port > 65535) return fail(errc::invalid_argument, "--bidi-port must be -1..65535");
  result<int> fd = fail(errc::io, "no port tried");
  if (safe_range && (o.port < safe_range->first || o.port > safe_range->second)) {
    // Port 0 or a port outside the platform's range: take the first free one inside it.
    for (int p = safe_range->first; p <= safe_range->second && !fd; ++p)
      fd = rt::listen_tcp(host, static_cast<std::uint16_t>(p), false, 1024);
    if (!fd)
      return fail(errc::io, "cannot listen on any bidi port in SAGEMAKER_SAFE_PORT_RANGE " +
                                std::to_string(safe_range->first) + "-" + std::to_string(safe_range->second) +
                                ": " + fd.error().message);
  } else {
    fd = rt::listen_tcp(host, static_cast<std::uint16_t>(o.port), false, 1024);
    if (!fd) return fail(errc::io, "cannot listen on the bidi port " + std::to_string(o.port) + ": " + fd.error().message);
  }
  std::unique_ptr<bidi_port> p(new bidi_port());
  p->fd_ = *fd;
  auto port = rt::bound_port(p->fd_);
  p->port_ = port ? *port : 0;
  p->routes_.get("/", upgrade_handler(svc, o));
  p->routes_.get("/{path...}", upgrade_handler(svc, o));
  return p;
}

bidi_port::~bidi_port() {
  if (fd_ >= 0) ::close(fd_);
}

rt::task<void> serve_main_and_bidi(rt::loop& lp, int listen_fd, const http::router& routes,
                                   const http::server_options& hopts, const bidi_port* bidi) {
  rt::scope servers;
  servers.spawn(http::serve(lp, listen_fd, routes, hopts));
  if (bidi) servers.spawn(http::serve(lp, bidi->fd(), bidi->routes(), hopts));
  co_await servers.join();
}

}  // namespace vks::server
