// Sliding-window KV pools (#22): the scheduler's second block table releases the window
// layers' blocks that fall out of the window, so a long sequence holds a bounded number of
// them, and a cached prefix is reused only as far as the window pool still holds its window.
#include "catch.hpp"

#include <numeric>
#include <vector>

#include "engine/scheduler.hpp"

using namespace vks::engine;

namespace {

std::vector<int32_t> ids_from(int n, int start) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

// One step; every sampling sequence gets token 7.
step_plan run_step(scheduler& s) {
  step_plan p = s.schedule();
  std::vector<std::pair<seq_id, int32_t>> sampled;
  for (const auto& e : p.seqs)
    if (e.sample) sampled.emplace_back(e.id, 7);
  s.update(p, sampled);
  return p;
}

// Steps until sequence `id` has computed n tokens (prompt and generated).
void run_until(scheduler& s, seq_id id, int n) {
  for (int i = 0; i < 1000 && s.find(id)->n_computed < n; ++i) run_step(s);
  REQUIRE(s.find(id)->n_computed >= n);
}

// Every block a query at position `pos` reads is live in the window table; the ones
// before its window are released.
void check_window_table(const sequence_state& st, int window, int block_size) {
  const int first = std::max(0, st.n_computed - window + 1) / block_size;
  for (size_t j = 0; j < st.wblocks.size(); ++j) {
    INFO("block " << j << " of " << st.wblocks.size() << ", n_computed " << st.n_computed);
    if (static_cast<int>(j) < first) CHECK(st.wblocks[j] == k_no_block);
    else CHECK(st.wblocks[j] >= 0);
  }
}

}  // namespace

TEST_CASE("window pool: a long sequence holds a bounded number of window blocks", "[engine][scheduler][window]") {
  const int B = 4, W = 10;
  block_manager full(64, B), win(64, B);
  scheduler s({.max_num_batched_tokens = 8, .max_num_seqs = 4}, full);
  s.set_window_pool(&win, W);
  s.add(1, ids_from(20, 100));
  int peak = 0;
  for (int i = 0; i < 120; ++i) {
    run_step(s);
    const sequence_state* st = s.find(1);
    peak = std::max(peak, win.n_used());
    check_window_table(*st, W, B);
    CHECK(st->blocks.size() == st->wblocks.size());
    CHECK(full.n_used() == static_cast<int>(st->blocks.size()));
  }
  const sequence_state* st = s.find(1);
  CHECK(st->n_computed > 100);                 // well past ten windows
  CHECK(full.n_used() >= st->n_computed / B);  // the global layers keep every position
  // The window and a prefill chunk of 8: at most (W - 1 + 8) / B + 2 blocks at any time.
  CHECK(peak <= (W - 1 + 8) / B + 2);
  CHECK(win.n_used() <= (W - 1) / B + 2);
  s.finish(1);
  CHECK(full.n_used() == 0);
  CHECK(win.n_used() == 0);
}

TEST_CASE("window pool: a cached prefix is reused only while its window blocks are cached",
          "[engine][scheduler][window]") {
  const int B = 4, W = 8;
  const auto prompt = ids_from(30, 100);
  SECTION("window blocks still cached: the whole prefix is a hit") {
    block_manager full(64, B), win(64, B);
    scheduler s({.max_num_batched_tokens = 8, .max_num_seqs = 4}, full);
    s.set_window_pool(&win, W);
    s.add(1, prompt);
    run_until(s, 1, 32);
    s.finish(1);
    s.add(2, prompt);
    auto p = run_step(s);
    REQUIRE(p.seqs.size() == 1);
    CHECK(s.find(2)->n_cached == 28);  // 7 whole blocks, the last token left to compute
    CHECK(p.seqs[0].first_pos == 28);
    check_window_table(*s.find(2), W, B);
    s.finish(2);
    CHECK(full.n_used() == 0);
    CHECK(win.n_used() == 0);
  }
  SECTION("window blocks evicted by other traffic: the prefix is computed again") {
    block_manager full(64, B), win(6, B);  // a window pool that another prompt cycles through
    scheduler s({.max_num_batched_tokens = 8, .max_num_seqs = 4}, full);
    s.set_window_pool(&win, W);
    s.add(1, prompt);
    run_until(s, 1, 32);
    s.finish(1);
    s.add(3, ids_from(40, 500));
    run_until(s, 3, 40);
    s.finish(3);
    CHECK(full.cached_prefix_blocks(prompt) == 7);  // the global layers' blocks are all cached
    s.add(2, prompt);
    auto p = run_step(s);
    REQUIRE(p.seqs.size() == 1);
    // Not 28: the full pool's chain is whole but the window pool lost the blocks a query at
    // 28 reads, so the hit stops where the window pool still holds the window (here none).
    CHECK(s.find(2)->n_cached == 0);
    CHECK(p.seqs[0].first_pos == 0);
    check_window_table(*s.find(2), W, B);
    run_until(s, 2, 32);
    s.finish(2);
    CHECK(full.n_used() == 0);
    CHECK(win.n_used() == 0);
  }
}

TEST_CASE("window pool: a partly evicted window shortens the hit to a point whose window is whole",
          "[engine][block]") {
  const int B = 4;
  block_manager win(16, B);
  const auto toks = ids_from(24, 100);
  std::vector<block_id> table;
  std::vector<std::uint64_t> hashes;
  REQUIRE(win.grow(table, 24));
  win.commit_full_blocks(toks, 24, table, hashes);
  CHECK(win.has_window(toks, 6, 0));
  // Release blocks 0..2 (out of a window) and evict them by taking every free block.
  CHECK(win.release_before(table, 3) == 3);
  CHECK(table[0] == k_no_block);
  CHECK(table[2] == k_no_block);
  CHECK(table[3] >= 0);
  CHECK(win.release_before(table, 3) == 0);  // already released
  CHECK(win.has_window(toks, 6, 3));         // blocks 3..5 still referenced
  std::vector<block_id> other;
  REQUIRE(win.grow(other, win.n_free() * B));  // evicts everything free, the released three included
  CHECK_FALSE(win.has_window(toks, 6, 2));
  CHECK(win.has_window(toks, 6, 3));
  std::vector<block_id> t2;
  std::vector<std::uint64_t> h2;
  win.acquire_window(toks, 6, 4, t2, h2);
  REQUIRE(t2.size() == 6);
  CHECK(h2 == hashes);
  CHECK(t2[3] == k_no_block);
  CHECK(t2[4] == table[4]);
  CHECK(t2[5] == table[5]);
  win.truncate(t2, h2, 5);
  CHECK(t2.size() == 5);
  CHECK(h2.size() == 5);
  win.release(t2);
  win.release(table);
  win.release(other);
  CHECK(win.n_used() == 0);
}
