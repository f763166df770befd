// session_pins: the KV blocks that stateful sessions (SageMaker sticky sessions) keep in
// the prefix cache. A session's pins are a reference on each block of its conversation's
// latest hash chain, so they are never evicted while the session holds them; the next
// request of the session finds them through the normal prefix lookup. Bounded: at most
// `max_blocks` pinned blocks in all (a chain beyond what is left is pinned up to it).
// Sessions are keys chosen by the caller (non-zero); a new chain replaces the session's
// previous pins. Not thread-safe: engine thread only (it borrows the block_manager).
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/block_manager.hpp"

namespace vks::engine {

class session_pins {
 public:
  session_pins(block_manager& blocks, int max_blocks) : blocks_(blocks), max_blocks_(max_blocks) {}
  ~session_pins() { clear(); }
  session_pins(const session_pins&) = delete;
  session_pins& operator=(const session_pins&) = delete;

  // Pins the cached blocks of `hashes` (a sequence's chain) for `key`, replacing what the
  // key held. Returns the blocks now pinned for it (fewer than the chain when the cap or
  // an evicted block cut it short).
  int pin(std::uint64_t key, std::span<const std::uint64_t> hashes);
  // Drops the key's pins (unknown keys are ignored).
  void release(std::uint64_t key);
  // Drops the pins of the session pinned least recently; false when none holds any.
  // The engine's last resort when a request cannot fit otherwise.
  bool release_oldest();
  void clear();

  int n_pinned() const noexcept { return n_pinned_; }
  int n_sessions() const noexcept { return static_cast<int>(by_key_.size()); }
  int max_blocks() const noexcept { return max_blocks_; }

 private:
  struct entry {
    std::vector<block_id> blocks;
    std::list<std::uint64_t>::iterator lru;
  };
  block_manager& blocks_;
  int max_blocks_;
  int n_pinned_ = 0;
  std::unordered_map<std::uint64_t, entry> by_key_;
  std::list<std::uint64_t> lru_;  // front = pinned least recently
};

}  // namespace vks::engine
