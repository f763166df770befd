// Accept loop and drain (see server.hpp).
#include "http/server.hpp"

#include "base/log.hpp"
#include "base/log_throttle.hpp"
#include "rt/io.hpp"
#include "rt/scope.hpp"

namespace vks::http {

namespace {
// After `after`, aborts every connection still open (unless `stop` fires first).
rt::task<void> abort_after(rt::loop& lp, std::chrono::milliseconds after, rt::scope& conns, std::stop_token stop) {
  auto r = co_await rt::sleep_for(lp, after, stop);
  if (r) {
    log::warn("http: drain timeout ({} ms) passed; closing {} connection(s)", after.count(), conns.n_live());
    conns.request_stop();
  }
}
// One accepted connection, counted in the budget's connection total while it lives.
rt::task<void> counted_connection(rt::task<void> conn, server_budget* budget) {
  co_await std::move(conn);
  if (budget) budget->close_connection();
}

// Accept backpressure: while the process is at its connection cap, poll (cheaply, every
// 10 ms) instead of accepting; false when drain fires meanwhile.
rt::task<bool> wait_below_cap(rt::loop& lp, const server_budget* budget, std::stop_token drain) {
  if (!budget || !budget->at_connection_cap()) co_return true;
  thread_local log_throttle warnings{std::chrono::seconds(10)};
  if (warnings.allow())
    log::warn("http: {} connections open (--max-connections): accepting paused", budget->n_connections());
  while (budget->at_connection_cap()) {
    auto r = co_await rt::sleep_for(lp, std::chrono::milliseconds(10), drain);
    if (!r) co_return false;
  }
  co_return true;
}

}  // namespace

rt::task<void> serve(rt::loop& lp, int listen_fd, const router& routes, const server_options& opts) {
  rt::scope conns;
  std::stop_token drain = lp.stop_token();
  while (!drain.stop_requested()) {
    const bool below = co_await wait_below_cap(lp, opts.budget, drain);  // named: GCC 12 and co_await in if
    if (!below) break;
    auto fd = co_await rt::accept(lp, listen_fd, drain);
    if (!fd) {
      if (fd.error().code == errc::cancelled) break;
      // EMFILE/ENFILE/ENOBUFS: back off briefly instead of spinning.
      log::warn("http: accept failed: {}", fd.error().message);
      (void)co_await rt::sleep_for(lp, std::chrono::milliseconds(10), drain);
      continue;
    }
    if (opts.budget) opts.budget->open_connection();
    conns.spawn(counted_connection(serve_connection(lp, *fd, routes, opts, drain, conns.token()), opts.budget));
  }
  rt::scope timer;
  std::stop_source timer_stop;
  if (conns.n_live() > 0) timer.spawn(abort_after(lp, opts.drain_timeout, conns, timer_stop.get_token()));
  co_await conns.join();
  timer_stop.request_stop();
  co_await timer.join();
}

}  // namespace vks::http
