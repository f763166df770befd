#include "catch.hpp"

#include <numeric>
#include <vector>

#include "engine/block_manager.hpp"

using vks::engine::block_id;
using vks::engine::block_manager;

namespace {
std::vector<int32_t> iota_tokens(int n, int start = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}
}  // namespace

TEST_CASE("blocks are allocated, counted and released", "[engine][blocks]") {
  block_manager bm(8, 4);
  std::vector<block_id> a, b;
  CHECK(bm.blocks_needed(0, 1) == 1);
  CHECK(bm.blocks_needed(0, 4) == 1);
  CHECK(bm.blocks_needed(0, 5) == 2);
  CHECK(bm.blocks_needed(2, 5) == 0);
  REQUIRE(bm.grow(a, 10));  // 3 blocks
  CHECK(a.size() == 3);
  CHECK(bm.n_free() == 5);
  REQUIRE(bm.grow(b, 20));  // 5 blocks
  CHECK(bm.n_free() == 0);
  std::vector<block_id> c;
  CHECK_FALSE(bm.grow(c, 1));
  CHECK(c.empty());
  bm.release(a);
  CHECK(a.empty());
  CHECK(bm.n_free() == 3);
  REQUIRE(bm.grow(c, 12));
  CHECK(bm.n_free() == 0);
  bm.release(b);
  bm.release(c);
  CHECK(bm.n_free() == 8);
}

TEST_CASE("prefix cache reuses full blocks of an identical prefix", "[engine][blocks]") {
  block_manager bm(16, 4);
  auto prompt = iota_tokens(10);  // 2 full blocks + 2 tokens
  std::vector<block_id> t1;
  std::vector<uint64_t> h1;
  CHECK(bm.acquire_cached_prefix(prompt, t1, h1) == 0);
  REQUIRE(bm.grow(t1, 10));
  bm.commit_full_blocks(prompt, 10, t1, h1);
  CHECK(h1.size() == 2);

  // Same prompt: both full blocks hit (not the partial third).
  std::vector<block_id> t2;
  std::vector<uint64_t> h2;
  CHECK(bm.acquire_cached_prefix(prompt, t2, h2) == 8);
  REQUIRE(t2.size() == 2);
  CHECK(t2[0] == t1[0]);
  CHECK(t2[1] == t1[1]);
  CHECK(bm.stats().n_hits == 8);

  // A prompt diverging in the second block hits only the first.
  auto other = prompt;
  other[5] = 999;
  std::vector<block_id> t3;
  std::vector<uint64_t> h3;
  CHECK(bm.acquire_cached_prefix(other, t3, h3) == 4);

  // At least one token is always left to compute: an 8-token prompt hits one block.
  std::vector<block_id> t4;
  std::vector<uint64_t> h4;
  CHECK(bm.acquire_cached_prefix(iota_tokens(8), t4, h4) == 4);
  bm.release(t1);
  bm.release(t2);
  bm.release(t3);
  bm.release(t4);
  CHECK(bm.n_free() == 16);
}

TEST_CASE("freed cached blocks survive until evicted, LRU", "[engine][blocks]") {
  block_manager bm(4, 2);
  auto p = iota_tokens(5);  // 2 full blocks
  std::vector<block_id> t;
  std::vector<uint64_t> h;
  REQUIRE(bm.grow(t, 5));
  bm.commit_full_blocks(p, 5, t, h);
  bm.release(t);
  CHECK(bm.n_free() == 4);
  {  // still cached after release
    std::vector<block_id> t2;
    std::vector<uint64_t> h2;
    CHECK(bm.acquire_cached_prefix(p, t2, h2) == 4);
    bm.release(t2);
  }
  // Allocating 2 blocks uses the uncached ones first: the prefix survives.
  std::vector<block_id> x;
  REQUIRE(bm.grow(x, 4));
  {
    std::vector<block_id> t2;
    std::vector<uint64_t> h2;
    CHECK(bm.acquire_cached_prefix(p, t2, h2) == 4);
    bm.release(t2);
  }
  // Taking everything evicts the cache; the tail block goes before the head block.
  std::vector<block_id> y;
  REQUIRE(bm.grow(y, 2));
  {
    std::vector<block_id> t2;
    std::vector<uint64_t> h2;
    CHECK(bm.acquire_cached_prefix(p, t2, h2) == 2);  // head still cached
    bm.release(t2);
  }
  bm.release(x);
  bm.release(y);
}

TEST_CASE("shared blocks are refcounted", "[engine][blocks]") {
  block_manager bm(4, 2);
  auto p = iota_tokens(3);
  std::vector<block_id> a;
  std::vector<uint64_t> ha;
  REQUIRE(bm.grow(a, 3));
  bm.commit_full_blocks(p, 3, a, ha);
  std::vector<block_id> b;
  std::vector<uint64_t> hb;
  CHECK(bm.acquire_cached_prefix(p, b, hb) == 2);
  CHECK(bm.n_free() == 2);
  bm.release(a);
  CHECK(bm.n_free() == 3);  // the shared block is still held by b
  bm.release(b);
  CHECK(bm.n_free() == 4);
}

TEST_CASE("prefix caching can be disabled", "[engine][blocks]") {
  block_manager bm(8, 2, false);
  auto p = iota_tokens(5);
  std::vector<block_id> a;
  std::vector<uint64_t> h;
  REQUIRE(bm.grow(a, 5));
  bm.commit_full_blocks(p, 5, a, h);
  std::vector<block_id> b;
  std::vector<uint64_t> hb;
  CHECK(bm.acquire_cached_prefix(p, b, hb) == 0);
  bm.release(a);
}

TEST_CASE("salted chains: a different salt never shares blocks, the same salt does", "[engine][blocks]") {
  block_manager bm(32, 4);
  CHECK(bm.salt_root("") == 0);
  const auto ra = bm.salt_root("client-a"), rb = bm.salt_root("client-b");
  CHECK(ra != 0);
  CHECK(rb != 0);
  CHECK(ra != rb);
  CHECK(bm.salt_root("client-a") == ra);  // stable within a process
  block_manager other(32, 4);
  CHECK(other.salt_root("client-a") != ra);  // keyed per process: roots cannot be predicted

  auto prompt = iota_tokens(10);
  std::vector<block_id> t1;
  std::vector<uint64_t> h1;
  CHECK(bm.acquire_cached_prefix(prompt, t1, h1, ra) == 0);
  REQUIRE(bm.grow(t1, 10));
  bm.commit_full_blocks(prompt, 10, t1, h1, ra);
  REQUIRE(h1.size() == 2);
  CHECK(h1[0] != block_manager::block_hash(0, std::span(prompt).subspan(0, 4)));

  std::vector<block_id> t2, t3, t4;
  std::vector<uint64_t> h2, h3, h4;
  CHECK(bm.acquire_cached_prefix(prompt, t2, h2, rb) == 0);  // other salt
  CHECK(bm.acquire_cached_prefix(prompt, t3, h3) == 0);      // unsalted
  CHECK(bm.acquire_cached_prefix(prompt, t4, h4, ra) == 8);  // same salt
  CHECK(t4 == std::vector<block_id>{t1[0], t1[1]});
  // The reverse: an unsalted chain is not found by a salted lookup.
  auto p2 = iota_tokens(10, 50);
  std::vector<block_id> u1, u2;
  std::vector<uint64_t> g1, g2;
  REQUIRE(bm.grow(u1, 10));
  bm.commit_full_blocks(p2, 10, u1, g1);
  CHECK(bm.acquire_cached_prefix(p2, u2, g2, ra) == 0);
  for (auto* t : {&t1, &t2, &t3, &t4, &u1, &u2}) bm.release(*t);
  CHECK(bm.n_free() == 32);
}

TEST_CASE("a prefix filter limits hits to the longest prefix ending at a usable block", "[engine][blocks]") {
  // Hybrid models: a cached prefix is usable only where a recurrent-state checkpoint exists.
  block_manager bm(16, 4);
  auto prompt = iota_tokens(14);  // 3 full blocks + 2 tokens
  std::vector<block_id> t1;
  std::vector<uint64_t> h1;
  REQUIRE(bm.grow(t1, 14));
  bm.commit_full_blocks(prompt, 14, t1, h1);
  REQUIRE(h1.size() == 3);
  const uint64_t usable = h1[1];
  bm.set_prefix_filter([&](uint64_t h) { return h == usable; });
  std::vector<block_id> t2;
  std::vector<uint64_t> h2;
  CHECK(bm.acquire_cached_prefix(prompt, t2, h2) == 8);  // blocks 0-1, not 2 (no checkpoint there)
  CHECK(h2 == std::vector<uint64_t>{h1[0], h1[1]});
  bm.set_prefix_filter([](uint64_t) { return false; });
  std::vector<block_id> t3;
  std::vector<uint64_t> h3;
  CHECK(bm.acquire_cached_prefix(prompt, t3, h3) == 0);
  CHECK(t3.empty());
  bm.release(t1);
  bm.release(t2);
  CHECK(bm.n_free() == 16);  // the filtered-out blocks took no reference
}
