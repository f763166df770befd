// OTLP/HTTP JSON trace export (see otlp.hpp).
#include "server/otlp.hpp"

#include <algorithm>
#include <cstring>
#include <random>

#include "api/json.hpp"
#include "base/log.hpp"
#include "rt/io.hpp"
#include "rt/loop.hpp"
#include "rt/timeout.hpp"

namespace vks::server {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is invalid in traceparent
}

template <std::size_t N>
bool parse_hex(std::string_view s, std::array<std::uint8_t, N>& out) {
  if (s.size() != 2 * N) return false;
  bool any = false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    any = any || out[i] != 0;
  }
  return any;
}

template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& a) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (auto b : a) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

template <std::size_t N>
std::array<std::uint8_t, N> random_id() {
  thread_local std::mt19937_64 rng{std::random_device{}() ^ (static_cast<std::uint64_t>(std::random_device{}()) << 32)};
  std::array<std::uint8_t, N> a{};
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      const std::uint64_t v = rng();
      std::memcpy(a.data() + i, &v, std::min<std::size_t>(8, N - i));
    }
  } while (std::all_of(a.begin(), a.end(), [](std::uint8_t b) { return b == 0; }));
  return a;
}

api::json attr(std::string_view key, std::string_view v) {
  api::json a = api::json::object();
  a["key"] = std::string(key);
  a["value"] = api::json::object();
  a["value"]["stringValue"] = std::string(v);
  return a;
}
api::json attr(std::string_view key, std::int64_t v) {
  api::json a = api::json::object();
  a["key"] = std::string(key);
  a["value"] = api::json::object();
  a["value"]["intValue"] = std::to_string(v);  // OTLP JSON: int64 as a decimal string
  return a;
}

api::json span_json(const trace_id& t, const span_id& id, const std::optional<span_id>& parent, std::string_view name,
                    int kind, std::int64_t start, std::int64_t end) {
  api::json j = api::json::object();
  j["traceId"] = to_hex(t);
  j["spanId"] = to_hex(id);
  j["name"] = std::string(name);
  j["kind"] = kind;
  j["startTimeUnixNano"] = std::to_string(start);
  j["endTimeUnixNano"] = std::to_string(std::max(start, end));
  if (parent) j["parentSpanId"] = to_hex(*parent);
  return j;
}

std::atomic<trace_exporter*> g_active{nullptr};

}  // namespace

std::optional<trace_parent> parse_traceparent(std::string_view v) {
  // version(2) - trace-id(32) - parent-id(16) - flags(2); later versions may append fields.
  if (v.size() < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return std::nullopt;
  if (v.size() > 55 && v[55] != '-') return std::nullopt;
  if (hex_value(v[0]) < 0 || hex_value(v[1]) < 0 || v.substr(0, 2) == "ff") return std::nullopt;
  if (v.substr(0, 2) == "00" && v.size() != 55) return std::nullopt;
  trace_parent p;
  if (!parse_hex(v.substr(3, 32), p.trace) || !parse_hex(v.substr(36, 16), p.parent)) return std::nullopt;
  if (hex_value(v[53]) < 0 || hex_value(v[54]) < 0) return std::nullopt;
  p.flags = static_cast<std::uint8_t>(hex_value(v[53]) * 16 + hex_value(v[54]));
  return p;
}

std::int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

trace_id new_trace_id() { return random_id<16>(); }
span_id new_span_id() { return random_id<8>(); }

std::string otlp_json(std::span<const request_span> spans, std::string_view service_name) {
  api::json list = api::json::array();
  for (const auto& s : spans) {
    api::json j = span_json(s.trace, s.id, s.parent, s.name, 2 /* SERVER */, s.start_ns, s.end_ns);
    api::json attrs = api::json::array();
    attrs.push_back(attr("gen_ai.request.model", s.model));
    attrs.push_back(attr("gen_ai.usage.input_tokens", s.prompt_tokens));
    attrs.push_back(attr("gen_ai.usage.output_tokens", s.completion_tokens));
    attrs.push_back(attr("vkserve.cached_tokens", s.cached_tokens));
    attrs.push_back(attr("vkserve.request_id", s.request_id));
    attrs.push_back(attr("http.response.status_code", s.http_status));
    j["attributes"] = std::move(attrs);
    api::json status = api::json::object();
    status["code"] = s.error.empty() ? 1 : 2;  // STATUS_CODE_OK / STATUS_CODE_ERROR
    if (!s.error.empty()) status["message"] = s.error;
    j["status"] = std::move(status);
    list.push_back(std::move(j));
    for (const auto& ph : s.phases) {
      api::json c = span_json(s.trace, new_span_id(), s.id, ph.name, 1 /* INTERNAL */, ph.start_ns, ph.end_ns);
      c["attributes"] = api::json::array();
      c["attributes"].push_back(attr("vkserve.request_id", s.request_id));
      list.push_back(std::move(c));
    }
  }
  api::json scope = api::json::object();
  scope["scope"] = api::json::object();
  scope["scope"]["name"] = "vkserve";
  scope["spans"] = std::move(list);
  api::json resource_spans = api::json::object();
  resource_spans["resource"] = api::json::object();
  resource_spans["resource"]["attributes"] = api::json::array();
  resource_spans["resource"]["attributes"].push_back(attr("service.name", service_name));
  resource_spans["scopeSpans"] = api::json::array();
  resource_spans["scopeSpans"].push_back(std::move(scope));
  api::json body = api::json::object();
  body["resourceSpans"] = api::json::array();
  body["resourceSpans"].push_back(std::move(resource_spans));
  return api::dump_json(body);
}

result<otlp_endpoint> parse_otlp_endpoint(std::string_view url) {
  auto bad = [&](const char* why) {
    return fail(errc::invalid_argument, "--otlp-traces-endpoint " + std::string(url) + ": " + why);
  };
  constexpr std::string_view scheme = "http://";
  if (url.substr(0, scheme.size()) != scheme) return bad("only http:// is supported (send to a local collector)");
  std::string_view rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  otlp_endpoint ep;
  ep.path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  if (ep.path.empty() || ep.path == "/") ep.path = "/v1/traces";
  std::string_view host = hostport, port;
  if (!hostport.empty() && hostport.front() == '[') {  // [v6]:port
    const auto close = hostport.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 address");
    host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') return bad("bad port");
      port = hostport.substr(close + 2);
    }
  } else if (const auto colon = hostport.rfind(':'); colon != std::string_view::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  if (host.empty()) return bad("no host");
  ep.host = std::string(host);
  if (!port.empty()) {
    int p = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || p > 65535) return bad("bad port");
      p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535) return bad("bad port");
    ep.port = static_cast<std::uint16_t>(p);
  }
  for (char c : ep.path)
    if (c <= 0x20 || c >= 0x7f) return bad("bad path");
  return ep;
}

// ---- exporter -----------------------------------------------------------------------------

result<std::unique_ptr<trace_exporter>> trace_exporter::start(std::string_view url, exporter_options o) {
  auto ep = parse_otlp_endpoint(url);
  if (!ep) return fail(std::move(ep).error());
  auto lp = rt::loop::create();
  if (!lp) return fail(std::move(lp).error());
  std::unique_ptr<trace_exporter> e(new trace_exporter(std::move(*ep), std::move(o)));
  e->loop_ = std::move(*lp);
  e->thread_ = std::thread([p = e.get()] { p->thread_main(); });
  return e;
}

trace_exporter::trace_exporter(otlp_endpoint ep, exporter_options o) : ep_(std::move(ep)), opt_(std::move(o)) {}

trace_exporter::~trace_exporter() {
  if (loop_) loop_->stop();
  if (thread_.joinable()) thread_.join();
}

void trace_exporter::submit(request_span s) noexcept {
  try {
    std::lock_guard lk(mu_);
    if (queue_.size() >= opt_.max_queue) {
      n_dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queue_.push_back(std::move(s));
  } catch (...) {
    n_dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::vector<request_span> trace_exporter::take_batch() {
  std::lock_guard lk(mu_);
  std::vector<request_span> b;
  while (!queue_.empty() && b.size() < opt_.max_batch) {
    b.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return b;
}

void trace_exporter::thread_main() { loop_->run(run_loop()); }

rt::task<void> trace_exporter::run_loop() {
  rt::loop& lp = *loop_;
  for (bool last = false; !last;) {
    auto slept = co_await rt::sleep_for(lp, opt_.interval, lp.stop_token());
    last = !slept;  // stop requested: one final export of what is queued
    for (;;) {
      std::vector<request_span> batch = take_batch();
      if (batch.empty()) break;
      const bool ok = co_await post(otlp_json(batch, opt_.service_name));
      (ok ? n_exported_ : n_dropped_).fetch_add(batch.size(), std::memory_order_relaxed);
      if (!ok) break;  // the collector is down or slow: try again next interval
    }
  }
}

rt::task<bool> trace_exporter::post(std::string body) {
  rt::loop& lp = *loop_;
  rt::deadline dl(lp, opt_.timeout);  // not tied to stop: the final export gets its time too
  auto fd = co_await rt::connect_tcp(lp, ep_.host, ep_.port, dl.token());
  if (!fd) {
    log::debug("otlp: cannot connect to {}:{}: {}", ep_.host, ep_.port, fd.error().message);
    co_return false;
  }
  std::string req = "POST " + ep_.path + " HTTP/1.1\r\nHost: " + ep_.host + ":" + std::to_string(ep_.port) +
                    "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n\r\n";
  req += body;
  bool ok = false;
  auto sent = co_await rt::send_all(lp, *fd, std::as_bytes(std::span(req.data(), req.size())), dl.token());
  if (sent) {
    std::string head;
    std::array<std::byte, 1024> buf{};
    while (head.find("\r\n") == std::string::npos && head.size() < 4096) {
      auto n = co_await rt::recv_some(lp, *fd, buf, dl.token());
      if (!n || *n == 0) break;
      head.append(reinterpret_cast<const char*>(buf.data()), *n);
    }
    // "HTTP/1.1 2xx ..."
    ok = head.size() >= 12 && head.compare(0, 5, "HTTP/") == 0 && head[9] == '2';
    if (!ok) log::debug("otlp: the collector answered '{}'", head.substr(0, head.find("\r\n")));
  }
  (void)co_await rt::close(lp, *fd);
  co_return ok;
}

trace_exporter* active_trace_exporter() noexcept { return g_active.load(std::memory_order_acquire); }
void set_active_trace_exporter(trace_exporter* e) noexcept { g_active.store(e, std::memory_order_release); }

}  // namespace vks::server
