// The HTTP server on one loop: an accept loop that spawns one connection coroutine per
// socket into a scope, and the connection coroutine itself (keep-alive, pipelining in
// order, limits, timeouts, 100-continue, graceful close). Drain: when the loop's stop token
// fires, accepting stops, idle connections close, requests in flight finish (answered with
// `Connection: close`); after drain_timeout the remaining connections are aborted (their
// handlers see disconnected()). serve() returns when every connection has closed.
#pragma once

#include <chrono>
#include <cstddef>
#include <stop_token>

#include "http/budget.hpp"
#include "http/parser.hpp"
#include "http/router.hpp"
#include "rt/loop.hpp"
#include "rt/task.hpp"

namespace vks::http {

struct server_options {
  parse_limits limits;                                  // 431 / 413 thresholds
  std::chrono::milliseconds header_timeout{10'000};     // first byte -> end of head (408)
  std::chrono::milliseconds body_timeout{60'000};       // end of head -> end of body (408)
  std::chrono::milliseconds idle_timeout{60'000};       // keep-alive wait for the next request
  std::chrono::milliseconds send_timeout{60'000};       // one write stalled this long -> close
  std::chrono::milliseconds drain_timeout{30'000};      // graceful stop budget
  std::size_t read_buffer_bytes = 4096;                 // per connection while idle
  std::size_t max_read_buffer_bytes = 64 * 1024;        // while a large body arrives
  // Shared connection cap and buffered-request-byte budget (nullptr: unlimited). A request
  // whose body does not fit (Content-Length reserved up front, chunked bodies as they grow)
  // is answered 503 + Retry-After and the connection closed. Not owned; outlives serve().
  server_budget* budget = nullptr;
};

// Serves one accepted socket until it closes; takes ownership of fd (closes it).
// `drain` stopped: finish the current request, then close. `abort` stopped: close now.
rt::task<void> serve_connection(rt::loop& lp, int fd, const router& routes, const server_options& opts,
                                std::stop_token drain, std::stop_token abort);

// Accepts on listen_fd (not closed here) until lp.stop_token() fires, then drains. While
// opts.budget is at its connection cap, accepting pauses (new peers wait in the backlog).
// `routes` and `opts` must outlive the task.
rt::task<void> serve(rt::loop& lp, int listen_fd, const router& routes, const server_options& opts);

}  // namespace vks::http
