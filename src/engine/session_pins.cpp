// Pinned prefix-cache chains of stateful sessions (see session_pins.hpp).
#include "engine/session_pins.hpp"

namespace vks::engine {

int session_pins::pin(std::uint64_t key, std::span<const std::uint64_t> hashes) {
  auto it = by_key_.find(key);
  const int old = it == by_key_.end() ? 0 : static_cast<int>(it->second.blocks.size());
  // Take the new references before dropping the old ones: blocks shared by both chains
  // never reach refcount 0 in between.
  std::vector<block_id> fresh;
  const int room = max_blocks_ - (n_pinned_ - old);
  if (room > 0) blocks_.pin_chain(hashes, room, fresh);
  if (it != by_key_.end()) {
    blocks_.release(it->second.blocks);
    lru_.erase(it->second.lru);
    by_key_.erase(it);
  }
  n_pinned_ -= old;
  const int n = static_cast<int>(fresh.size());
  if (n == 0) return 0;
  n_pinned_ += n;
  entry e{std::move(fresh), lru_.insert(lru_.end(), key)};
  by_key_.emplace(key, std::move(e));
  return n;
}

void session_pins::release(std::uint64_t key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  n_pinned_ -= static_cast<int>(it->second.blocks.size());
  blocks_.release(it->second.blocks);
  lru_.erase(it->second.lru);
  by_key_.erase(it);
}

bool session_pins::release_oldest() {
  if (lru_.empty()) return false;
  release(lru_.front());
  return true;
}

void session_pins::clear() {
  while (release_oldest()) {
  }
}

}  // namespace vks::engine
