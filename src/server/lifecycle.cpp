// Signal watcher thread (sigtimedwait on a blocked set) and systemd notifications.
#include "server/lifecycle.hpp"

#include <csignal>
#include <ctime>
#include <string>

#if VKS_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace vks::server {
namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

signal_watch::signal_watch() {
  sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  thread_ = std::thread([this] { run(); });
}

signal_watch::~signal_watch() {
  quit_ = true;
  if (thread_.joinable()) thread_.join();
}

void signal_watch::run() {
  const sigset_t set = stop_signals();
  const timespec tick{0, 100'000'000};  // re-check quit_ every 100 ms
  while (!quit_.load()) {
    const int s = sigtimedwait(&set, nullptr, &tick);
    if (s > 0) {
      signo_ = s;
      request_stop();
    }
  }
}

void signal_watch::request_stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

bool signal_watch::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, timeout, [&] { return stop_.load(); });
  return stop_.load();
}

void notify_systemd(std::string_view state) {
#if VKS_HAVE_SYSTEMD
  (void)sd_notify(0, std::string(state).c_str());
#else
  (void)state;
#endif
}

}  // namespace vks::server
