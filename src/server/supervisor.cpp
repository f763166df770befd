// The supervisor thread: watchdog pings, STATUS= lines and engine-failure detection.
#include "server/supervisor.hpp"

#include <algorithm>

#include "base/log.hpp"

namespace vks::server {

using clock_type = std::chrono::steady_clock;

namespace {

void send(const sd_notifier& n, const std::string& state) {
  if (auto r = n.send(state); !r) log::debug("{}", r.error().message);
}

}  // namespace

supervisor::supervisor(service& svc, const sd_notifier& notifier, signal_watch& sig, supervisor_options o)
    : svc_(svc), notifier_(notifier), sig_(sig), opt_(o) {
  if (auto w = notifier_.watchdog()) {
    ping_every_ = *w / 2;
    stall_limit_ = *w / 2;
    opt_.tick = std::min(opt_.tick, std::chrono::duration_cast<std::chrono::milliseconds>(ping_every_));
    opt_.tick = std::max(opt_.tick, std::chrono::milliseconds(1));
    log::info("systemd watchdog: {} ms; pinging every {} ms while the engine makes progress",
              std::chrono::duration_cast<std::chrono::milliseconds>(*w).count(),
              std::chrono::duration_cast<std::chrono::milliseconds>(ping_every_).count());
  } else {
    stall_limit_ = std::chrono::seconds(60);  // only logged without a watchdog
  }
  thread_ = std::thread([this] { run(); });
}

supervisor::~supervisor() {
  {
    std::lock_guard lk(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void supervisor::set_phase(std::string phase) {
  {
    std::lock_guard lk(mu_);
    phase_ = std::move(phase);
  }
  refresh_status();  // at once: phases can be shorter than a tick
}

void supervisor::refresh_status() {
  std::lock_guard lk(status_mu_);  // computed under it too: no stale line overtakes a newer one
  std::string status = status_line();
  if (status == last_status_) return;
  send(notifier_, "STATUS=" + status);
  last_status_ = std::move(status);
}

void supervisor::run() {
  std::unique_lock lk(mu_);
  while (!quit_) {
    lk.unlock();
    tick(clock_type::now());
    lk.lock();
    cv_.wait_for(lk, opt_.tick, [&] { return quit_; });
  }
}

bool supervisor::alive() {
  const auto st = svc_.state();
  if (st == service_state::loading) return true;  // loading (or reloading) is progress
  if (engine_failed_.load()) return opt_.recover;  // recover: the reload follows
  model_host* host = svc_.host();
  if (st == service_state::failed || !host) return false;
  auto& eng = host->engine();
  if (!eng.healthy()) return false;
  const auto busy = eng.progress().busy_for;
  if (busy >= stall_limit_) {
    if (!stall_logged_)
      log::error("engine step running for {} ms: the engine is stalled{}",
                 std::chrono::duration_cast<std::chrono::milliseconds>(busy).count(),
                 ping_every_.count() ? " (watchdog pings stopped)" : "");
    stall_logged_ = true;
    return false;
  }
  stall_logged_ = false;
  return true;
}

std::string supervisor::status_line() {
  const auto st = svc_.state();
  if (engine_failed_.load()) return opt_.recover ? "engine failed (device lost?): recovering" : "engine failed (device lost?): exiting";
  switch (st) {
    case service_state::loading: {
      std::lock_guard lk(mu_);
      return "loading: " + phase_;
    }
    case service_state::failed: return "failed";
    case service_state::draining: return "draining";
    case service_state::ready: break;
  }
  model_host* host = svc_.host();
  if (!host) return "starting";
  const auto s = host->engine().stats();
  return std::to_string(s.n_running) + " running, " + std::to_string(s.n_waiting) + " waiting";
}

void supervisor::tick(clock_type::time_point now) {
  if (!engine_failed_.load() && svc_.state() == service_state::ready) {
    model_host* host = svc_.host();
    if (host && !host->engine().healthy()) {
      engine_failed_ = true;
      log::error("the engine failed (device lost?); in-flight requests got 503; {}",
                 opt_.recover ? "recreating the device and reloading the model" : "exiting for the supervisor");
      sig_.request_stop();
    }
  }
  refresh_status();
  // Half a tick of slack: a wake-up a hair early must not skip a ping (that would
  // double the gap to the full interval).
  if (ping_every_.count() > 0 && now + opt_.tick / 2 >= next_ping_ && alive()) {
    send(notifier_, std::string("WATCHDOG=1"));
    next_ping_ = now + ping_every_;
  }
}

}  // namespace vks::server
