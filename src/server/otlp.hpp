// OpenTelemetry traces over OTLP/HTTP JSON (--otlp-traces-endpoint; docs/deploying.md):
// one server span per generation request with child spans for its prepare, queue, prefill
// and decode phases, exported in batches by a thread of its own that runs an rt::loop (the
// runtime's connect/send/recv), never on the request path. submit() only appends to a
// bounded queue (mutex, no I/O): when the collector is slow or down the queue fills and
// further spans are dropped and counted, so requests never wait for tracing.
// A W3C `traceparent` header on the request makes the span its child (same trace id).
// Thread-safety: parse_*/otlp_json are pure; trace_exporter::submit and the counters from
// any thread; start/destruction on one thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/result.hpp"
#include "rt/task.hpp"

namespace vks::rt { class loop; }

namespace vks::server {

using trace_id = std::array<std::uint8_t, 16>;
using span_id = std::array<std::uint8_t, 8>;

// A parsed W3C traceparent ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>").
struct trace_parent {
  trace_id trace{};
  span_id parent{};
  std::uint8_t flags = 0;
};
// nullopt for anything malformed (wrong length, upper-case or non-hex digits, version ff,
// all-zero ids): the request then starts a trace of its own, as the W3C spec says.
std::optional<trace_parent> parse_traceparent(std::string_view v);

// What the HTTP side knows of a request's trace: its traceparent and when it arrived.
struct trace_info {
  std::optional<trace_parent> parent;
  std::int64_t start_ns = 0;  // 0: when drive() starts
};

// Nanoseconds since the Unix epoch (system clock): OTLP's time base.
std::int64_t unix_now_ns();

struct span_phase {
  std::string name;  // prepare | queue | prefill | decode
  std::int64_t start_ns = 0, end_ns = 0;
};

// One finished request, as the tracing hook in drive() records it.
struct request_span {
  trace_id trace{};
  span_id id{};
  std::optional<span_id> parent;  // from traceparent
  std::string name;               // e.g. "chat.completions"
  std::int64_t start_ns = 0, end_ns = 0;
  std::string request_id, model;
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  int http_status = 200;          // 499: the client went away
  std::string error;              // "" = ok
  std::vector<span_phase> phases;
};

// Fresh random ids (never all zero).
trace_id new_trace_id();
span_id new_span_id();

// The ExportTraceServiceRequest JSON of a batch (OTLP/HTTP JSON encoding: hex ids, int64
// as decimal strings): one resource (service.name), one scope, each request's span then
// its phases as child spans.
std::string otlp_json(std::span<const request_span> spans, std::string_view service_name);

struct otlp_endpoint {
  std::string host;  // literal IPv4/IPv6 address or localhost (no DNS on the loop)
  std::uint16_t port = 4318;
  std::string path;  // "/v1/traces" when the URL has no path
};
// http://HOST[:PORT][/PATH]; https is refused (no TLS here: use a local collector).
result<otlp_endpoint> parse_otlp_endpoint(std::string_view url);

struct exporter_options {
  std::size_t max_queue = 2048;      // spans waiting; beyond: dropped (counted)
  std::size_t max_batch = 512;       // spans per POST
  std::chrono::milliseconds interval{500};  // between exports
  std::chrono::milliseconds timeout{5000};  // one POST (connect + send + reply)
  std::string service_name = "vkserve";
};

class trace_exporter {
 public:
  static result<std::unique_ptr<trace_exporter>> start(std::string_view url, exporter_options o = {});
  ~trace_exporter();  // one last export of what is queued (bounded by the timeout), then stops
  trace_exporter(const trace_exporter&) = delete;
  trace_exporter& operator=(const trace_exporter&) = delete;

  // Queues a finished span; drops it (counted) when the queue is full. Never blocks on I/O.
  void submit(request_span s) noexcept;

  std::uint64_t n_exported() const noexcept { return n_exported_.load(); }
  std::uint64_t n_dropped() const noexcept { return n_dropped_.load(); }  // queue full or export failed
  const otlp_endpoint& endpoint() const noexcept { return ep_; }

 private:
  trace_exporter(otlp_endpoint ep, exporter_options o);  // in otlp.cpp, where rt::loop is complete
  void thread_main();
  std::vector<request_span> take_batch();
  rt::task<void> run_loop();
  // One POST on the exporter's loop; true when the collector answered 2xx.
  rt::task<bool> post(std::string body);

  otlp_endpoint ep_;
  exporter_options opt_;
  std::mutex mu_;
  std::deque<request_span> queue_;
  std::atomic<std::uint64_t> n_exported_{0}, n_dropped_{0};
  std::unique_ptr<rt::loop> loop_;
  std::thread thread_;
};

// The process's exporter (set by serve before the I/O threads start, cleared after they
// stop), or nullptr when tracing is off.
trace_exporter* active_trace_exporter() noexcept;
void set_active_trace_exporter(trace_exporter* e) noexcept;

}  // namespace vks::server
