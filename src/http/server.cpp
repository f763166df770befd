// Accept loop and drain (see server.hpp).
#include "http/server.hpp"

#include "base/log.hpp"
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
}  // namespace

rt::task<void> serve(rt::loop& lp, int listen_fd, const router& routes, const server_options& opts) {
  rt::scope conns;
  std::stop_token drain = lp.stop_token();
  while (!drain.stop_requested()) {
    auto fd = co_await rt::accept(lp, listen_fd, drain);
    if (!fd) {
      if (fd.error().code == errc::cancelled) break;
      // EMFILE/ENFILE/ENOBUFS: back off briefly instead of spinning.
      log::warn("http: accept failed: {}", fd.error().message);
      (void)co_await rt::sleep_for(lp, std::chrono::milliseconds(10), drain);
      continue;
    }
    conns.spawn(serve_connection(lp, *fd, routes, opts, drain, conns.token()));
  }
  rt::scope timer;
  std::stop_source timer_stop;
  if (conns.n_live() > 0) timer.spawn(abort_after(lp, opts.drain_timeout, conns, timer_stop.get_token()));
  co_await conns.join();
  timer_stop.request_stop();
  co_await timer.join();
}

}  // namespace vks::http
