// supervisor: the thread that watches the engine while `vkserve serve` runs and tells
// systemd what it sees. Every tick it
//   - sends WATCHDOG=1 every half $WATCHDOG_USEC while the server makes progress: loading
//     (and reloading after a device loss in recover mode), or serving with a healthy
//     engine whose current step has run less than half the interval. A stuck step (a hung
//     GPU) or a failed engine (device lost) stops the pings, so systemd restarts us;
//   - publishes STATUS= (load phase, then "N running, M waiting");
//   - notices an engine that failed (engine::llm_engine::healthy() false, e.g.
//     VK_ERROR_DEVICE_LOST), logs it once and asks the main thread to stop (signal_watch).
// Stop it (destroy) before the model_host goes: it reads the published host.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "server/lifecycle.hpp"
#include "server/sd_notify.hpp"
#include "server/service.hpp"

namespace vks::server {

struct supervisor_options {
  bool recover = false;  // --on-device-lost recover: keep the watchdog fed while reloading
  // Between checks (and STATUS updates) when no watchdog is asked; with one, the tick is
  // at most half its interval.
  std::chrono::milliseconds tick{250};
};

class supervisor {
 public:
  supervisor(service& svc, const sd_notifier& notifier, signal_watch& sig, supervisor_options o);
  ~supervisor();  // stops and joins the thread
  supervisor(const supervisor&) = delete;
  supervisor& operator=(const supervisor&) = delete;

  // The load phase shown in STATUS= while the service state is `loading`.
  void set_phase(std::string phase);
  // Sends STATUS= now if it changed (e.g. right after the host is published). Any thread.
  void refresh_status();
  // True once the engine failed (the stop the main thread sees came from here).
  bool engine_failed() const noexcept { return engine_failed_.load(); }

 private:
  // Whether the server counts as making progress now (the watchdog rule above).
  bool alive();
  void run();
  void tick(std::chrono::steady_clock::time_point now);
  std::string status_line();

  service& svc_;
  const sd_notifier& notifier_;
  signal_watch& sig_;
  supervisor_options opt_;
  std::chrono::microseconds ping_every_{0};   // 0: no watchdog
  std::chrono::nanoseconds stall_limit_{0};   // a step running longer is "stuck"
  std::chrono::steady_clock::time_point next_ping_{};
  std::mutex status_mu_;  // guards last_status_; taken before mu_
  std::string last_status_;
  bool stall_logged_ = false;
  std::atomic<bool> engine_failed_{false};

  std::mutex mu_;  // guards phase_ and quit_
  std::condition_variable cv_;
  std::string phase_ = "starting";
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace vks::server
