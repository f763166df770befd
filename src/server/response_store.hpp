// response_store: the bounded store behind the Responses API's `store`,
// `previous_response_id`, GET and DELETE /v1/responses/{id}. Each entry keeps the response
// object and the conversation that led to it (chat messages, input and output, without
// the instructions) so a follow-up can continue it. Bounds: a count and a byte cap (the
// JSON text sizes of both), a time to live, least-recently-used eviction past either cap
// (a get counts as a use); an entry larger than the byte cap is not stored. A follow-up's
// prompt starts with the earlier prompt's tokens, so the prefix cache serves them.
// Thread-safe (one mutex; prep workers read, loop threads write).
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "api/json.hpp"

namespace vks::server {

struct response_store_limits {
  std::size_t max_entries = 1024;
  std::size_t max_bytes = 64u << 20;
  std::chrono::seconds ttl{3600};
};

class response_store {
 public:
  using clock = std::chrono::steady_clock;
  struct entry {
    api::json response;
    api::json conversation;
  };

  explicit response_store(response_store_limits lim) : lim_(lim) {}

  // Stores (or replaces) `id`; evicts the least recently used entries past the caps.
  // False when the entry alone exceeds the byte cap (nothing stored).
  bool put(const std::string& id, entry e, clock::time_point now = clock::now());
  // A copy of the entry, or nullopt when absent or expired (expired entries are dropped).
  std::optional<entry> get(const std::string& id, clock::time_point now = clock::now());
  bool erase(const std::string& id);

  std::size_t size() const;
  std::size_t bytes() const;

 private:
  struct slot {
    std::string id;
    entry e;
    std::size_t bytes = 0;
    clock::time_point stored;
  };
  void drop(std::list<slot>::iterator it);  // lock held

  response_store_limits lim_;
  mutable std::mutex mu_;
  std::list<slot> lru_;  // front: most recently used
  std::unordered_map<std::string, std::list<slot>::iterator> index_;
  std::size_t bytes_ = 0;
};

}  // namespace vks::server
