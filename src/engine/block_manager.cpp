// Block pool bookkeeping and the prefix-cache hash chain.
#include "engine/block_manager.hpp"

#include <algorithm>
#include <random>

#include "base/assert.hpp"

namespace vks::engine {

block_manager::block_manager(int n_blocks, int block_size, bool enable_prefix_caching)
    : blocks_(static_cast<size_t>(n_blocks)), block_size_(block_size), prefix_caching_(enable_prefix_caching) {
  VKS_ASSERT(n_blocks > 0 && block_size > 0, "empty KV pool");
  for (block_id b = 0; b < n_blocks; ++b) blocks_[static_cast<size_t>(b)].free_it = free_.insert(free_.end(), b);
  std::random_device rd;
  for (auto& k : salt_key_) k = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

namespace {

std::uint64_t rotl(std::uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

// SipHash-2-4 (Aumasson and Bernstein), 64-bit output.
std::uint64_t siphash24(const std::uint64_t key[2], std::string_view in) {
  std::uint64_t v0 = 0x736f6d6570736575ull ^ key[0], v1 = 0x646f72616e646f6dull ^ key[1];
  std::uint64_t v2 = 0x6c7967656e657261ull ^ key[0], v3 = 0x7465646279746573ull ^ key[1];
  auto round = [&] {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  };
  auto compress = [&](std::uint64_t m) {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  };
  const std::size_t n = in.size();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t m = 0;
    for (int j = 0; j < 8; ++j) m |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[i + j])) << (8 * j);
    compress(m);
  }
  std::uint64_t last = static_cast<std::uint64_t>(n & 0xff) << 56;
  for (std::size_t j = 0; i + j < n; ++j) last |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[i + j])) << (8 * j);
  compress(last);
  v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

}  // namespace

std::uint64_t block_manager::salt_root(std::string_view salt) const {
  if (salt.empty()) return 0;
  const std::uint64_t h = siphash24(salt_key_, salt);
  return h == 0 ? 1 : h;
}

std::uint64_t block_manager::block_hash(std::uint64_t parent, std::span<const std::int32_t> tokens) {
  // splitmix64-style mixing over (parent, tokens): fast, well distributed; collisions are
  // ruled out by comparing the stored tokens on lookup.
  auto mix = [](std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  std::uint64_t h = mix(parent ^ 0x5bd1e9955bd1e995ull);
  for (auto t : tokens) h = mix(h ^ static_cast<std::uint32_t>(t));
  return h == 0 ? 1 : h;
}

void block_manager::take_ref(block_id b) {
  auto& blk = blocks_[static_cast<size_t>(b)];
  if (blk.ref++ == 0) free_.erase(blk.free_it);
}

void block_manager::uncache(block_id b) {
  auto& blk = blocks_[static_cast<size_t>(b)];
  if (!blk.cached) return;
  auto it = by_hash_.find(blk.hash);
  if (it != by_hash_.end() && it->second == b) by_hash_.erase(it);
  blk.cached = false;
  blk.tokens.clear();
}

std::optional<block_id> block_manager::take_free() {
  if (free_.empty()) return std::nullopt;
  block_id b = free_.front();
  uncache(b);  // eviction of the least recently freed cached block
  take_ref(b);
  return b;
}

std::optional<block_id> block_manager::lookup(std::uint64_t h, std::uint64_t parent,
                                              std::span<const std::int32_t> chunk) const {
  auto it = by_hash_.find(h);
  if (it == by_hash_.end()) return std::nullopt;
  const auto& blk = blocks_[static_cast<size_t>(it->second)];
  if (blk.parent != parent || !std::equal(chunk.begin(), chunk.end(), blk.tokens.begin(), blk.tokens.end()))
    return std::nullopt;
  return it->second;
}

int block_manager::cached_prefix_blocks(std::span<const std::int32_t> tokens, std::uint64_t root) const {
  if (!prefix_caching_ || tokens.empty()) return 0;
  const size_t b = static_cast<size_t>(block_size_);
  const size_t max_blocks = (tokens.size() - 1) / b;  // leave >= 1 token to compute
  std::uint64_t parent = root;
  size_t usable = 0;  // the prefix filter (hybrids) as acquire_cached_prefix applies it
  for (size_t i = 0; i < max_blocks; ++i) {
    auto chunk = tokens.subspan(i * b, b);
    const std::uint64_t h = block_hash(parent, chunk);
    if (!lookup(h, parent, chunk)) break;
    parent = h;
    if (!usable_ || usable_(h)) usable = i + 1;
  }
  return static_cast<int>(usable);
}

int block_manager::acquire_cached_prefix(std::span<const std::int32_t> tokens, std::vector<block_id>& table,
                                         std::vector<std::uint64_t>& hashes, std::uint64_t root, int max_blocks) {
  VKS_ASSERT(table.empty() && hashes.empty(), "prefix lookup on a non-empty table");
  if (!prefix_caching_ || tokens.empty()) return 0;
  stats_.n_queries += tokens.size();
  const size_t b = static_cast<size_t>(block_size_);
  size_t n_max = (tokens.size() - 1) / b;  // leave >= 1 token to compute
  if (max_blocks >= 0) n_max = std::min(n_max, static_cast<size_t>(max_blocks));
  std::uint64_t parent = root;
  std::vector<std::pair<block_id, std::uint64_t>> hits;
  for (size_t i = 0; i < n_max; ++i) {
    auto chunk = tokens.subspan(i * b, b);
    std::uint64_t h = block_hash(parent, chunk);
    auto id = lookup(h, parent, chunk);
    if (!id) break;
    hits.emplace_back(*id, h);
    parent = h;
  }
  if (usable_)
    while (!hits.empty() && !usable_(hits.back().second)) hits.pop_back();
  for (auto [id, h] : hits) {
    take_ref(id);
    table.push_back(id);
    hashes.push_back(h);
  }
  int cached = static_cast<int>(table.size() * b);
  stats_.n_hits += static_cast<std::uint64_t>(cached);
  return cached;
}

bool block_manager::has_window(std::span<const std::int32_t> tokens, int n_blocks, int first, std::uint64_t root) const {
  const size_t b = static_cast<size_t>(block_size_);
  if (n_blocks <= 0) return true;
  if (!prefix_caching_ || static_cast<size_t>(n_blocks) * b > tokens.size()) return false;
  std::uint64_t parent = root;
  for (int i = 0; i < n_blocks; ++i) {
    auto chunk = tokens.subspan(static_cast<size_t>(i) * b, b);
    const std::uint64_t h = block_hash(parent, chunk);
    if (i >= first && !lookup(h, parent, chunk)) return false;
    parent = h;
  }
  return true;
}

void block_manager::acquire_window(std::span<const std::int32_t> tokens, int n_blocks, int first,
                                   std::vector<block_id>& table, std::vector<std::uint64_t>& hashes, std::uint64_t root) {
  VKS_ASSERT(table.empty() && hashes.empty(), "window lookup on a non-empty table");
  VKS_ASSERT(has_window(tokens, n_blocks, first, root), "acquire_window without the window cached");
  const size_t b = static_cast<size_t>(block_size_);
  std::uint64_t parent = root;
  for (int i = 0; i < n_blocks; ++i) {
    auto chunk = tokens.subspan(static_cast<size_t>(i) * b, b);
    const std::uint64_t h = block_hash(parent, chunk);
    block_id id = k_no_block;
    if (i >= first) {
      id = *lookup(h, parent, chunk);
      take_ref(id);
    }
    table.push_back(id);
    hashes.push_back(h);
    parent = h;
  }
}

int block_manager::release_before(std::vector<block_id>& table, int n) {
  int released = 0;
  for (int i = std::min(n, static_cast<int>(table.size())) - 1; i >= 0; --i) {
    auto& e = table[static_cast<size_t>(i)];
    if (e == k_no_block) break;  // everything before was released earlier
    drop_ref(e);
    e = k_no_block;
    ++released;
  }
  return released;
}

void block_manager::truncate(std::vector<block_id>& table, std::vector<std::uint64_t>& hashes, int n) {
  while (static_cast<int>(table.size()) > n) {
    if (table.back() != k_no_block) drop_ref(table.back());
    table.pop_back();
  }
  if (static_cast<int>(hashes.size()) > n) hashes.resize(static_cast<size_t>(n));
}

int block_manager::blocks_needed(int n_have, int n_tokens) const {
  int need = (n_tokens + block_size_ - 1) / block_size_;
  return need > n_have ? need - n_have : 0;
}

bool block_manager::grow(std::vector<block_id>& table, int n_tokens) {
  int need = blocks_needed(static_cast<int>(table.size()), n_tokens);
  if (need > n_free()) return false;
  for (int i = 0; i < need; ++i) table.push_back(*take_free());
  return true;
}

void block_manager::commit_full_blocks(std::span<const std::int32_t> tokens, int n_computed,
                                       std::span<const block_id> table, std::vector<std::uint64_t>& hashes,
                                       std::uint64_t root) {
  if (!prefix_caching_) return;
  const size_t b = static_cast<size_t>(block_size_);
  size_t n_full = static_cast<size_t>(n_computed) / b;
  VKS_ASSERT(n_full <= table.size() && static_cast<size_t>(n_computed) <= tokens.size(), "commit beyond table");
  for (size_t i = hashes.size(); i < n_full; ++i) {
    auto chunk = tokens.subspan(i * b, b);
    const std::uint64_t parent = i == 0 ? root : hashes[i - 1];
    std::uint64_t h = block_hash(parent, chunk);
    hashes.push_back(h);
    block_id id = table[i];
    if (id == k_no_block) continue;  // released (out of every window) before its commit
    auto& blk = blocks_[static_cast<size_t>(id)];
    if (blk.cached || by_hash_.count(h)) continue;  // same content already cached elsewhere
    blk.cached = true;
    blk.hash = h;
    blk.parent = parent;
    blk.tokens.assign(chunk.begin(), chunk.end());
    by_hash_.emplace(h, id);
  }
}

int block_manager::pin_chain(std::span<const std::uint64_t> hashes, int max_blocks, std::vector<block_id>& out) {
  int n = 0;
  for (std::uint64_t h : hashes) {
    if (n >= max_blocks) break;
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    take_ref(it->second);
    out.push_back(it->second);
    ++n;
  }
  return n;
}

void block_manager::drop_ref(block_id b) {
  auto& blk = blocks_[static_cast<size_t>(b)];
  VKS_ASSERT(blk.ref > 0, "double release of a KV block");
  if (--blk.ref == 0) {
    // Uncached blocks are reused first; cached ones go to the back (kept longest).
    blk.free_it = blk.cached ? free_.insert(free_.end(), b) : free_.insert(free_.begin(), b);
  }
}

void block_manager::release(std::vector<block_id>& table) {
  for (auto it = table.rbegin(); it != table.rend(); ++it)
    if (*it != k_no_block) drop_ref(*it);
  table.clear();
}

}  // namespace vks::engine

namespace vks::engine {

void block_manager::share(std::span<const block_id> blocks, std::vector<block_id>& table) {
  for (block_id b : blocks) {
    VKS_ASSERT(b >= 0 && b < n_blocks() && blocks_[static_cast<size_t>(b)].ref > 0, "sharing a block not in use");
    take_ref(b);
    table.push_back(b);
  }
}

}  // namespace vks::engine
