// Signal watcher thread (sigtimedwait on a blocked set) and systemd notifications.
#include "server/lifecycle.hpp"

#include <csignal>
#include <ctime>
#include <string>

#include <cstdlib>

#include "base/log.hpp"
#include "gpu/fault.hpp"
#include "server/sd_notify.hpp"

namespace vks::server {
namespace {

bool test_faults_enabled() {
  const char* v = std::getenv("VKSERVE_TEST_FAULTS");
  return v && std::string(v) == "1";
}

sigset_t stop_signals(bool test_faults) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (test_faults) {
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
  }
  return set;
}

std::chrono::milliseconds test_hang() {
  const char* v = std::getenv("VKSERVE_TEST_HANG_MS");
  const long long ms = v ? std::atoll(v) : 0;
  return std::chrono::milliseconds(ms > 0 ? ms : 3000);
}

}  // namespace

signal_watch::signal_watch() : test_faults_(test_faults_enabled()) {
  sigset_t set = stop_signals(test_faults_);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  thread_ = std::thread([this] { run(); });
}

signal_watch::~signal_watch() {
  quit_ = true;
  if (thread_.joinable()) thread_.join();
}

void signal_watch::run() {
  const sigset_t set = stop_signals(test_faults_);
  const timespec tick{0, 100'000'000};  // re-check quit_ every 100 ms
  while (!quit_.load()) {
    const int s = sigtimedwait(&set, nullptr, &tick);
    if (s == SIGUSR1 || s == SIGUSR2) {
      log::warn("test hook: {} at the next GPU submit", s == SIGUSR1 ? "device loss" : "hang");
      if (s == SIGUSR1) gpu::fault::arm_device_lost();
      else gpu::fault::arm_hang(test_hang());
    } else if (s > 0) {
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
  if (auto r = process_notifier().send(state); !r) log::debug("{}", r.error().message);
}

}  // namespace vks::server
