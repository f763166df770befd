// Bounded response store (response_store.hpp).
#include "server/response_store.hpp"

namespace vks::server {

void response_store::drop(std::list<slot>::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->id);
  lru_.erase(it);
}

bool response_store::put(const std::string& id, entry e, clock::time_point now) {
  const std::size_t n = api::dump_json(e.response).size() + api::dump_json(e.conversation).size() + id.size();
  std::lock_guard lock(mu_);
  if (auto it = index_.find(id); it != index_.end()) drop(it->second);
  if (n > lim_.max_bytes || lim_.max_entries == 0) return false;
  while (!lru_.empty() && (lru_.size() >= lim_.max_entries || bytes_ + n > lim_.max_bytes)) drop(std::prev(lru_.end()));
  lru_.push_front({id, std::move(e), n, now});
  index_[id] = lru_.begin();
  bytes_ += n;
  return true;
}

std::optional<response_store::entry> response_store::get(const std::string& id, clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  if (now - it->second->stored > lim_.ttl) {
    drop(it->second);
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->e;
}

bool response_store::erase(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  drop(it->second);
  return true;
}

std::size_t response_store::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

std::size_t response_store::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace vks::server
