// KV block manager: hands out the fixed pool of KV-cache blocks (B tokens each) to
// sequences, with reference counts and prefix caching. A full block is identified by a
// hash chained over its predecessors' hashes and its own token ids, so two prompts that
// share a prefix share the blocks of that prefix. Blocks whose refcount drops to zero stay
// cached (and findable) until they are reused: LRU eviction, least recently freed first.
// A chain starts at a root: 0, or salt_root(cache_salt) for requests that carry a salt
// (vLLM's cache_salt; the server may mix in the caller's API key). Chains with different
// roots never share a block, so a client cannot time another client's prompts unless
// they share a salt.
// Sliding-window pools (a second block_manager for the window layers' cache): a table may
// hold k_no_block for positions that fell out of every window (release_before), and a
// prefix is reused only where the window pool still caches the blocks its window needs
// (has_window / acquire_window).
// Pure bookkeeping (no GPU): the runner's KV tensors are indexed by these block ids.
// Not thread-safe: engine thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vks::engine {

using block_id = std::int32_t;
// A table entry whose block was released (out of every sliding window): never read.
inline constexpr block_id k_no_block = -1;

struct prefix_stats {
  std::uint64_t n_queries = 0;  // prompt tokens looked up
  std::uint64_t n_hits = 0;     // prompt tokens found cached
};

class block_manager {
 public:
  // n_blocks blocks of block_size tokens; enable_prefix_caching=false disables lookups
  // and hash registration (blocks are still refcounted).
  block_manager(int n_blocks, int block_size, bool enable_prefix_caching = true);

  int block_size() const { return block_size_; }
  int n_blocks() const { return static_cast<int>(blocks_.size()); }
  // Blocks with refcount 0 (free, possibly holding a cached prefix).
  int n_free() const { return static_cast<int>(free_.size()); }
  int n_used() const { return n_blocks() - n_free(); }
  const prefix_stats& stats() const { return stats_; }

  // Longest cached prefix of `tokens` in whole blocks, capped so that at least one token
  // is left to compute (its logits are needed). Takes a reference on each hit block and
  // appends it to `table`; records the chain in `hashes`. Returns cached tokens.
  // `table` and `hashes` must be empty. `root`: the chain's root (salt_root).
  // At most max_blocks blocks (< 0: no cap).
  int acquire_cached_prefix(std::span<const std::int32_t> tokens, std::vector<block_id>& table,
                            std::vector<std::uint64_t>& hashes, std::uint64_t root = 0, int max_blocks = -1);
  // How many leading whole blocks of `tokens` acquire_cached_prefix would take now (no
  // references, no statistics).
  int cached_prefix_blocks(std::span<const std::int32_t> tokens, std::uint64_t root = 0) const;

  // Window pools: whether blocks [first, n_blocks) of the chain of `tokens` are all cached.
  bool has_window(std::span<const std::int32_t> tokens, int n_blocks, int first, std::uint64_t root = 0) const;
  // Fills `table` with n_blocks entries: k_no_block before `first`, then a reference on the
  // cached block of each chain hash (has_window must hold); `hashes` gets the whole chain.
  // `table` and `hashes` must be empty.
  void acquire_window(std::span<const std::int32_t> tokens, int n_blocks, int first, std::vector<block_id>& table,
                      std::vector<std::uint64_t>& hashes, std::uint64_t root = 0);
  // Drops the reference of every live entry of table[0, n) and sets it to k_no_block
  // (its block stays cached until evicted). Returns how many were released.
  int release_before(std::vector<block_id>& table, int n);
  // Keeps table[0, n) and hashes[0, n) (references dropped on the rest, last first).
  void truncate(std::vector<block_id>& table, std::vector<std::uint64_t>& hashes, int n);
  // Hybrid models: a cached prefix is usable only up to a block whose chain hash passes
  // `usable` (a recurrent-state checkpoint exists there); acquire_cached_prefix returns the
  // longest such prefix. Empty: every cached block is usable.
  void set_prefix_filter(std::function<bool(std::uint64_t)> usable) { usable_ = std::move(usable); }

  // Blocks needed to grow a table of n_have blocks to hold n_tokens positions.
  int blocks_needed(int n_have, int n_tokens) const;
  // Appends fresh blocks to `table` until it covers n_tokens positions. False (and `table`
  // unchanged) if too few free blocks.
  bool grow(std::vector<block_id>& table, int n_tokens);

  // Registers the full blocks of `tokens[0, n_computed)` that are not yet in `hashes`
  // (their KV rows are now written) so later prompts with the same root can reuse them.
  void commit_full_blocks(std::span<const std::int32_t> tokens, int n_computed,
                          std::span<const block_id> table, std::vector<std::uint64_t>& hashes,
                          std::uint64_t root = 0);

  // Takes a reference on the cached block of each hash of `hashes` in order (a chain from
  // commit_full_blocks), stopping at the first one no longer cached or after max_blocks;
  // appends them to `out`. Used to pin a session's prefix (session_pins): a block with a
  // reference is never evicted. Returns how many were taken; release() drops them.
  int pin_chain(std::span<const std::uint64_t> hashes, int max_blocks, std::vector<block_id>& out);

  // Takes one more reference on each block of `blocks` and appends them to `table` (a
  // sequence sharing another's full blocks: n > 1 siblings forked from one prompt).
  void share(std::span<const block_id> blocks, std::vector<block_id>& table);

  // Drops one reference on every block of `table` (in reverse order, so a sequence's tail
  // is evicted before its head; k_no_block entries skipped) and clears it.
  void release(std::vector<block_id>& table);

  // Hash of a full block given its parent's hash (the root for the first block). For fixed
  // tokens it is a bijection of `parent` (0 aside): different roots give different chains.
  static std::uint64_t block_hash(std::uint64_t parent, std::span<const std::int32_t> tokens);

  // The chain root of a cache salt: 0 for "", else a SipHash-2-4 of the bytes under a key
  // drawn at construction, never 0. The key is secret, so a client cannot choose a salt
  // whose root equals another client's (the token chain itself is not keyed).
  std::uint64_t salt_root(std::string_view salt) const;

 private:
  struct block {
    int ref = 0;
    std::uint64_t hash = 0;         // valid when cached
    std::uint64_t parent = 0;       // the chain hash before it (checked with the tokens)
    bool cached = false;            // registered in by_hash_
    std::vector<std::int32_t> tokens;  // cached blocks keep their ids to rule out collisions
    std::list<block_id>::iterator free_it;
  };
  std::optional<block_id> take_free();
  void take_ref(block_id b);
  void uncache(block_id b);
  void drop_ref(block_id b);
  // The cached block of chain hash h with that parent and tokens, if any.
  std::optional<block_id> lookup(std::uint64_t h, std::uint64_t parent, std::span<const std::int32_t> chunk) const;

  std::vector<block> blocks_;
  std::list<block_id> free_;       // front = evict first
  std::unordered_map<std::uint64_t, block_id> by_hash_;
  int block_size_;
  bool prefix_caching_;
  std::function<bool(std::uint64_t)> usable_;
  prefix_stats stats_;
  std::uint64_t salt_key_[2] = {0, 0};
};

}  // namespace vks::engine
