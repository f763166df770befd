// session_pins on a bare block_manager: pinned chains survive eviction pressure, a new
// chain replaces the old, the cap bounds the total, release and release_oldest free them.
#include "catch.hpp"

#include <numeric>
#include <vector>

#include "engine/block_manager.hpp"
#include "engine/session_pins.hpp"

using vks::engine::block_id;
using vks::engine::block_manager;
using vks::engine::session_pins;

namespace {

std::vector<int32_t> tokens_from(int n, int start) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

// Runs one "sequence" of `toks` through the pool (as the scheduler does) and frees it;
// returns its hash chain.
std::vector<std::uint64_t> run_seq(block_manager& bm, const std::vector<int32_t>& toks) {
  std::vector<block_id> table;
  std::vector<std::uint64_t> hashes;
  bm.acquire_cached_prefix(toks, table, hashes);
  REQUIRE(bm.grow(table, static_cast<int>(toks.size())));
  bm.commit_full_blocks(toks, static_cast<int>(toks.size()), table, hashes);
  bm.release(table);
  return hashes;
}

int cached_tokens(block_manager& bm, const std::vector<int32_t>& toks) {
  std::vector<block_id> table;
  std::vector<std::uint64_t> hashes;
  const int n = bm.acquire_cached_prefix(toks, table, hashes);
  bm.release(table);
  return n;
}

}  // namespace

TEST_CASE("session pins keep a chain cached through eviction pressure", "[engine][blocks][sessions]") {
  block_manager bm(8, 4);
  session_pins pins(bm, 4);
  const auto conv = tokens_from(13, 100);  // 3 full blocks
  const auto chain = run_seq(bm, conv);
  REQUIRE(chain.size() == 3);
  CHECK(pins.pin(7, chain) == 3);
  CHECK(pins.n_pinned() == 3);
  CHECK(bm.n_free() == 5);
  // Other traffic cycles through every free block twice.
  for (int i = 0; i < 4; ++i) run_seq(bm, tokens_from(20, 1000 * (i + 1)));
  CHECK(cached_tokens(bm, conv) == 12);
  // Unpinned, the same traffic evicts it.
  pins.release(7);
  CHECK(pins.n_pinned() == 0);
  CHECK(bm.n_free() == 8);
  for (int i = 0; i < 4; ++i) run_seq(bm, tokens_from(20, 9000 * (i + 1)));
  CHECK(cached_tokens(bm, conv) == 0);
}

TEST_CASE("session pins: a new chain replaces the old one; the cap bounds the total", "[engine][blocks][sessions]") {
  block_manager bm(16, 4);
  session_pins pins(bm, 5);
  auto turn1 = tokens_from(9, 100);  // 2 blocks
  CHECK(pins.pin(1, run_seq(bm, turn1)) == 2);
  auto turn2 = turn1;
  for (int t : tokens_from(8, 500)) turn2.push_back(t);  // 4 blocks, sharing the first 2
  CHECK(pins.pin(1, run_seq(bm, turn2)) == 4);
  CHECK(pins.n_pinned() == 4);
  CHECK(bm.n_used() == 4);  // the shared blocks are pinned once
  // Another session gets what is left of the cap: 1 block of its 3.
  CHECK(pins.pin(2, run_seq(bm, tokens_from(13, 3000))) == 1);
  CHECK(pins.n_pinned() == 5);
  CHECK(pins.n_sessions() == 2);
  // Least recently pinned first: session 1.
  REQUIRE(pins.release_oldest());
  CHECK(pins.n_pinned() == 1);
  CHECK(pins.n_sessions() == 1);
  pins.release(42);  // unknown: ignored
  pins.clear();
  CHECK_FALSE(pins.release_oldest());
  CHECK(bm.n_free() == 16);
}

TEST_CASE("session pins: a chain whose blocks were evicted pins only its cached head", "[engine][blocks][sessions]") {
  block_manager bm(4, 4);
  session_pins pins(bm, 4);
  const auto chain = run_seq(bm, tokens_from(16, 1));  // 4 blocks; freed tail first
  run_seq(bm, tokens_from(12, 700));                   // evicts its 3 last blocks
  CHECK(pins.pin(3, chain) == 1);                      // the head is still cached
  CHECK(pins.n_pinned() == 1);
  run_seq(bm, tokens_from(12, 900));                   // uses the 3 free blocks only
  CHECK(cached_tokens(bm, tokens_from(16, 1)) == 4);
  pins.release(3);
  run_seq(bm, tokens_from(16, 5000));                  // now everything is evicted
  CHECK(pins.pin(3, chain) == 0);
  CHECK(pins.n_sessions() == 0);
  CHECK(pins.pin(0x1234, std::vector<std::uint64_t>{}) == 0);
}
