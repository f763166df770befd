// SageMaker stateful (sticky) sessions, server side (contracts.md 3.3): the open sessions,
// their ids (UUIDs, as the AWS container standards make them), fixed expiry (TTL from
// creation: the Expires the client is told) and the engine key each one pins its KV
// blocks under (engine::request::session). Bounded: at most max_sessions open; expired
// sessions are swept on every create/find/close and by sweep() (called from /ping, which
// SageMaker polls), and each closed or expired session's key goes to `release` (the
// engine drops its pins). Thread-safe (one mutex; `release` is called under it and must
// not call back).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/result.hpp"

namespace vks::server {

struct session_limits {
  std::chrono::seconds ttl{1200};
  std::size_t max_sessions = 1024;
};

class session_registry {
 public:
  using clock = std::chrono::steady_clock;
  session_registry(session_limits l, std::function<void(std::uint64_t)> release)
      : limits_(l), release_(std::move(release)) {}

  struct created {
    std::string id;
    std::uint64_t key = 0;
    std::string header;  // X-Amzn-SageMaker-New-Session-Id: "<id>; Expires=YYYY-MM-DDTHH:MM:SSZ"
  };
  // A new session; unavailable ("too many open sessions") at the cap.
  result<created> create(clock::time_point now = clock::now());
  // The engine key of an open session; invalid_argument "session not found: <id>" for an
  // unknown or expired one (an expired one is closed now).
  result<std::uint64_t> find(std::string_view id, clock::time_point now = clock::now());
  // Closes an open session (its key is released); not_found as for find().
  result<void> close(std::string_view id, clock::time_point now = clock::now());
  // Closes every expired session; returns how many.
  std::size_t sweep(clock::time_point now = clock::now());
  std::size_t size() const;

  // The id grammar of the contract: [a-zA-Z0-9](-*[a-zA-Z0-9])*, at most 256 characters.
  static bool valid_id(std::string_view id);

 private:
  struct entry {
    std::uint64_t key;
    clock::time_point expires;
  };
  std::size_t sweep_locked(clock::time_point now);
  void erase_locked(std::unordered_map<std::string, entry>::iterator it);

  session_limits limits_;
  std::function<void(std::uint64_t)> release_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, entry> open_;
  std::uint64_t next_key_ = 1;
};

}  // namespace vks::server
