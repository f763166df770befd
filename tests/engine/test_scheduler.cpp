#include "catch.hpp"

#include <map>
#include <numeric>
#include <vector>

#include "engine/scheduler.hpp"

using namespace vks::engine;

namespace {
std::vector<int32_t> prompt_of(int n, int start = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

// Runs one step: every sampling sequence gets token 7.
step_plan step(scheduler& s) {
  step_plan p = s.schedule();
  std::vector<std::pair<seq_id, int32_t>> sampled;
  for (const auto& e : p.seqs)
    if (e.sample) sampled.emplace_back(e.id, 7);
  s.update(p, sampled);
  return p;
}

const scheduled_seq* entry(const step_plan& p, seq_id id) {
  for (const auto& e : p.seqs)
    if (e.id == id) return &e;
  return nullptr;
}
}  // namespace

TEST_CASE("a prompt is prefilled then decoded one token per step", "[engine][scheduler]") {
  block_manager bm(64, 4);
  scheduler s({.max_num_batched_tokens = 64, .max_num_seqs = 8}, bm);
  s.add(1, prompt_of(10));
  auto p = step(s);
  REQUIRE(p.seqs.size() == 1);
  CHECK(p.seqs[0].first_pos == 0);
  CHECK(p.seqs[0].n_tokens == 10);
  CHECK(p.seqs[0].sample);
  p = step(s);
  REQUIRE(p.seqs.size() == 1);
  CHECK(p.seqs[0].first_pos == 10);
  CHECK(p.seqs[0].n_tokens == 1);
  CHECK(s.find(1)->tokens.size() == 12);
  s.finish(1);
  CHECK(s.n_running() == 0);
  CHECK(bm.n_used() == 0);
}

TEST_CASE("chunked prefill respects the token budget and keeps decodes running", "[engine][scheduler]") {
  block_manager bm(128, 4);
  scheduler s({.max_num_batched_tokens = 16, .max_num_seqs = 8}, bm);
  s.add(1, prompt_of(4));
  step(s);  // seq 1 prefilled, now decoding
  s.add(2, prompt_of(40, 1000));  // shares no prefix with seq 1
  int prefilled = 0;
  for (int i = 0; i < 3; ++i) {
    auto p = step(s);
    CHECK(p.n_tokens <= 16);
    const auto* d = entry(p, 1);
    REQUIRE(d != nullptr);  // the decode is never stalled by the long prompt
    CHECK(d->n_tokens == 1);
    const auto* c = entry(p, 2);
    REQUIRE(c != nullptr);
    CHECK(c->first_pos == prefilled);
    prefilled += c->n_tokens;
    CHECK(c->sample == (prefilled == 40));
  }
  CHECK(prefilled == 40);
}

TEST_CASE("without chunked prefill a prompt waits for a budget that fits it", "[engine][scheduler]") {
  block_manager bm(128, 4);
  scheduler s({.max_num_batched_tokens = 16, .max_num_seqs = 8, .enable_chunked_prefill = false}, bm);
  s.add(1, prompt_of(10));
  s.add(2, prompt_of(10, 500));
  auto p = step(s);
  REQUIRE(p.seqs.size() == 1);  // 10 + 10 > 16
  CHECK(p.seqs[0].id == 1);
  p = step(s);
  CHECK(entry(p, 1) != nullptr);
  CHECK(entry(p, 2) != nullptr);
}

TEST_CASE("the sequence cap limits admissions; FIFO order is kept", "[engine][scheduler]") {
  block_manager bm(128, 4);
  scheduler s({.max_num_batched_tokens = 256, .max_num_seqs = 2}, bm);
  for (seq_id i = 1; i <= 4; ++i) s.add(i, prompt_of(5, static_cast<int>(i) * 100));
  auto p = step(s);
  CHECK(p.seqs.size() == 2);
  CHECK(entry(p, 1) != nullptr);
  CHECK(entry(p, 2) != nullptr);
  s.finish(1);
  p = step(s);
  CHECK(entry(p, 3) != nullptr);  // 3 before 4
  CHECK(entry(p, 4) == nullptr);
  CHECK(s.n_waiting() == 1);
}

TEST_CASE("running out of blocks preempts the youngest, which resumes later", "[engine][scheduler]") {
  // 6 blocks of 4 tokens; two sequences of 8-token prompts (2 blocks each) grow while decoding.
  block_manager bm(6, 4);
  scheduler s({.max_num_batched_tokens = 64, .max_num_seqs = 8}, bm);
  s.add(1, prompt_of(8));
  s.add(2, prompt_of(8, 300));
  step(s);  // both prefilled: 4 blocks used, 9 tokens each (8 + sampled)
  bool preempted = false;
  for (int i = 0; i < 12 && !preempted; ++i) {
    auto p = step(s);
    if (!p.preempted.empty()) {
      preempted = true;
      CHECK(p.preempted[0] == 2);  // the younger one
      CHECK(entry(p, 1) != nullptr);
      CHECK(s.find(2)->status == seq_status::waiting);
      CHECK(s.find(2)->n_computed == 0);
    }
  }
  REQUIRE(preempted);
  size_t len2 = s.find(2)->tokens.size();
  s.finish(1);  // frees memory
  auto p = step(s);
  const auto* r = entry(p, 2);
  REQUIRE(r != nullptr);
  // Recomputes its tokens (minus whatever the prefix cache still held) and samples next.
  CHECK(r->first_pos + r->n_tokens == static_cast<int>(len2));
  CHECK(r->sample);
  CHECK(s.find(2)->n_preemptions == 1);
}

TEST_CASE("abort (finish) in every state frees everything", "[engine][scheduler]") {
  block_manager bm(32, 4);
  scheduler s({.max_num_batched_tokens = 8, .max_num_seqs = 8}, bm);
  s.add(1, prompt_of(20));  // mid-prefill after one step
  s.add(2, prompt_of(3, 900));
  step(s);
  CHECK(s.find(1)->status == seq_status::running);
  s.add(3, prompt_of(5, 700));  // waiting
  s.finish(3);
  s.finish(1);
  s.finish(42);  // unknown: ignored
  step(s);
  s.finish(2);
  CHECK(s.n_running() == 0);
  CHECK(s.n_waiting() == 0);
  CHECK(bm.n_used() == 0);
}

TEST_CASE("prefix cache: a repeated prompt computes only its uncached tail", "[engine][scheduler]") {
  block_manager bm(64, 4);
  scheduler s({.max_num_batched_tokens = 64, .max_num_seqs = 8}, bm);
  s.add(1, prompt_of(18));
  step(s);
  s.finish(1);
  s.add(2, prompt_of(18));
  auto p = step(s);
  const auto* e = entry(p, 2);
  REQUIRE(e != nullptr);
  CHECK(e->first_pos == 16);
  CHECK(e->n_tokens == 2);
  CHECK(s.find(2)->n_cached == 16);
}

TEST_CASE("gated siblings wait for the shared prefill and then hit the cache", "[engine][scheduler]") {
  block_manager bm(64, 4);
  scheduler s({.max_num_batched_tokens = 8, .max_num_seqs = 8}, bm);
  s.add(1, prompt_of(12));
  s.add(2, prompt_of(12), {.gate = 1});
  auto p = step(s);  // 8 of 12 tokens of seq 1; seq 2 gated
  CHECK(entry(p, 2) == nullptr);
  p = step(s);  // seq 1 finishes prefill (4 tokens); gate still closed during this plan
  CHECK(entry(p, 1)->sample);
  p = step(s);
  const auto* e = entry(p, 2);
  REQUIRE(e != nullptr);
  CHECK(e->first_pos == 8);  // two full blocks shared
  CHECK(s.find(2)->n_cached == 8);
}

TEST_CASE("no starvation: every queued sequence is eventually admitted", "[engine][scheduler]") {
  block_manager bm(40, 4);
  scheduler s({.max_num_batched_tokens = 32, .max_num_seqs = 4}, bm);
  std::map<seq_id, int> generated;
  for (seq_id i = 1; i <= 12; ++i) s.add(i, prompt_of(6 + static_cast<int>(i), static_cast<int>(i) * 50));
  for (int stepn = 0; stepn < 400 && (s.n_running() + s.n_waiting()) > 0; ++stepn) {
    auto p = step(s);
    for (const auto& e : p.seqs)
      if (e.sample && ++generated[e.id] == 10) s.finish(e.id);
  }
  CHECK(s.n_running() + s.n_waiting() == 0);
  for (seq_id i = 1; i <= 12; ++i) CHECK(generated[i] == 10);
  CHECK(bm.n_used() == 0);
}

TEST_CASE("fairness: a single sequence is not starved by a group of 1,000 submitted first", "[engine][scheduler]") {
  block_manager bm(4096, 4);
  scheduler s({.max_num_batched_tokens = 64, .max_num_seqs = 8}, bm);
  for (seq_id i = 1; i <= 1000; ++i) s.add(i, prompt_of(6, static_cast<int>(i) * 10), {.group = 1});
  step(s);  // the big group fills the batch
  s.add(5000, prompt_of(6, 90000), {.group = 2});
  // Each sequence generates 3 tokens: slots free up every few steps.
  std::map<seq_id, int> generated;
  int scheduled_at = -1;
  for (int stepn = 0; stepn < 20 && scheduled_at < 0; ++stepn) {
    auto p = step(s);
    for (const auto& e : p.seqs) {
      if (e.id == 5000) scheduled_at = stepn;
      if (e.sample && ++generated[e.id] == 3) s.finish(e.id);
    }
  }
  // Admitted at the first free slot (FIFO would admit it after all 1,000: ~375 steps).
  REQUIRE(scheduled_at >= 0);
  CHECK(scheduled_at <= 3);
}

TEST_CASE("fairness: waiting groups are admitted round-robin, FIFO within a group", "[engine][scheduler]") {
  block_manager bm(256, 4);
  scheduler s({.max_num_batched_tokens = 256, .max_num_seqs = 5}, bm);
  for (seq_id i = 1; i <= 10; ++i) s.add(i, prompt_of(5, static_cast<int>(i) * 100), {.group = 7});
  s.add(11, prompt_of(5, 2000), {.group = 8});
  s.add(12, prompt_of(5, 2100), {.group = 9});
  s.add(13, prompt_of(5, 2200), {.group = 8});
  auto p = step(s);
  std::vector<seq_id> order;
  for (const auto& e : p.seqs) order.push_back(e.id);
  CHECK(order == std::vector<seq_id>{1, 11, 12, 2, 13});
  CHECK(s.n_waiting() == 8);
  CHECK(s.next_waiting() == 3);
}

TEST_CASE("fairness: a group whose head does not fit keeps its turn", "[engine][scheduler]") {
  // No chunked prefill: group 1's 20-token prompt needs the whole budget of a step.
  block_manager bm(256, 4);
  scheduler s({.max_num_batched_tokens = 20, .max_num_seqs = 8, .enable_chunked_prefill = false}, bm);
  s.add(1, prompt_of(4, 100), {.group = 1});
  auto p = step(s);  // seq 1 decodes from now on (1 token per step)
  s.add(2, prompt_of(20, 500), {.group = 2});
  s.add(3, prompt_of(3, 900), {.group = 3});
  p = step(s);
  CHECK(entry(p, 2) == nullptr);  // 1 + 20 > 20
  CHECK(entry(p, 3) == nullptr);  // does not overtake group 2's blocked head
  s.finish(1);
  p = step(s);
  CHECK(entry(p, 2) != nullptr);
}

TEST_CASE("fairness: a preempted sequence resumes before other groups' new work", "[engine][scheduler]") {
  block_manager bm(6, 4);
  scheduler s({.max_num_batched_tokens = 64, .max_num_seqs = 8}, bm);
  s.add(1, prompt_of(8), {.group = 1});
  s.add(2, prompt_of(8, 300), {.group = 2});
  step(s);
  bool preempted = false;
  for (int i = 0; i < 12 && !preempted; ++i) preempted = !step(s).preempted.empty();
  REQUIRE(preempted);
  s.add(3, prompt_of(4, 700), {.group = 3});
  CHECK(s.next_waiting() == 2);
}

TEST_CASE("the cache root separates prefix-cache chains", "[engine][scheduler]") {
  block_manager bm(64, 4);
  scheduler s({.max_num_batched_tokens = 64, .max_num_seqs = 8}, bm);
  const std::uint64_t a = bm.salt_root("tenant-a"), b = bm.salt_root("tenant-b");
  s.add(1, prompt_of(18), {.cache_root = a});
  step(s);
  s.finish(1);
  s.add(2, prompt_of(18), {.cache_root = b});
  s.add(3, prompt_of(18), {.cache_root = a});
  s.add(4, prompt_of(18));
  step(s);
  CHECK(s.find(2)->n_cached == 0);
  CHECK(s.find(3)->n_cached == 16);
  CHECK(s.find(4)->n_cached == 0);
}

// #23 (hybrid models): siblings forked from the step that completes the first one's prompt.
TEST_CASE("fork_siblings: siblings share the full blocks and get their own partial block", "[engine][scheduler]") {
  block_manager bm(16, 4);
  scheduler s({.max_num_batched_tokens = 8, .max_num_seqs = 3, .fork_siblings = true}, bm);
  s.add(1, prompt_of(10));
  s.add(2, prompt_of(10), {.gate = 1, .forkable = true});
  s.add(3, prompt_of(10), {.gate = 1, .forkable = true});
  s.add(4, prompt_of(10), {.gate = 1, .forkable = true});  // over the sequence cap: admitted later
  auto p = step(s);  // 8 of 10 prompt tokens
  CHECK(p.forks.empty());
  p = s.schedule();  // the last 2: siblings 2 and 3 forked (cap 3), 4 waits
  REQUIRE(entry(p, 1) != nullptr);
  REQUIRE(p.forks.size() == 2);
  const auto& parent = s.find(1)->blocks;
  for (size_t i = 0; i < 2; ++i) {
    const auto& f = p.forks[i];
    CHECK(f.id == 2 + i);
    CHECK(f.parent == 1);
    CHECK(f.n_prompt == 10);
    CHECK(f.tail_from == parent[2]);
    const auto& b = s.find(f.id)->blocks;
    REQUIRE(b.size() == 3);
    CHECK(b[0] == parent[0]);  // shared
    CHECK(b[1] == parent[1]);
    CHECK(f.tail_to == b[2]);  // its own copy of the block where the prompt ends
    CHECK(b[2] != parent[2]);
    CHECK(s.find(f.id)->n_computed == 10);
  }
  CHECK(bm.n_used() == 5);
  s.update(p, std::vector<std::pair<seq_id, int32_t>>{{1, 7}, {2, 8}, {3, 9}});
  CHECK(s.find(2)->tokens.back() == 8);
  CHECK(s.find(4)->status == seq_status::waiting);
  p = s.schedule();  // three decodes from position 10; nothing recomputed
  for (seq_id id : {1, 2, 3}) {
    REQUIRE(entry(p, id) != nullptr);
    CHECK(entry(p, id)->first_pos == 10);
    CHECK(entry(p, id)->n_tokens == 1);
  }
  for (seq_id id : {1, 2, 3, 4}) s.finish(id);
  CHECK(bm.n_used() == 0);
}

TEST_CASE("fork_siblings: a prompt ending on a block boundary shares every block", "[engine][scheduler]") {
  block_manager bm(16, 4);
  scheduler s({.max_num_batched_tokens = 64, .max_num_seqs = 8, .fork_siblings = true}, bm);
  s.add(1, prompt_of(8));
  s.add(2, prompt_of(8), {.gate = 1, .forkable = true});
  s.add(3, prompt_of(8), {.gate = 1});  // not forkable: admitted later
  auto p = s.schedule();
  REQUIRE(p.forks.size() == 1);
  CHECK(p.forks[0].tail_from == k_no_block);
  CHECK(s.find(2)->blocks == s.find(1)->blocks);
  CHECK(bm.n_used() == 2);
  s.update(p, std::vector<std::pair<seq_id, int32_t>>{{1, 7}, {2, 8}});
  for (seq_id id : {1, 2, 3}) s.finish(id);
  CHECK(bm.n_used() == 0);
}

// #23: a preempted sequence resumes where it stopped when the engine saved it, else recomputes.
TEST_CASE("resume_preempted: a preempted sequence resumes at its position unless its copy is dropped",
          "[engine][scheduler]") {
  for (const bool drop : {false, true}) {
    CAPTURE(drop);
    block_manager bm(6, 4);
    scheduler s({.max_num_batched_tokens = 64, .max_num_seqs = 8, .resume_preempted = true}, bm);
    s.add(1, prompt_of(8));
    s.add(2, prompt_of(8, 300));
    step(s);
    step_plan pre;
    for (int i = 0; i < 12 && pre.preempted.empty(); ++i) pre = step(s);
    REQUIRE(pre.preempted == std::vector<seq_id>{2});
    REQUIRE(pre.saves.size() == 1);
    const int pos = pre.saves[0].pos;
    CHECK(pos >= 9);
    CHECK(pre.saves[0].blocks.size() == static_cast<size_t>((pos + 3) / 4));
    CHECK(s.find(2)->resume_pos == pos);
    if (drop) s.drop_resume(2);
    s.finish(1);
    auto p = step(s);
    const auto* r = entry(p, 2);
    REQUIRE(r != nullptr);
    CHECK(r->resumed == !drop);
    if (drop) {
      CHECK(r->first_pos < pos);  // recomputed from what the prefix cache still holds
    } else {
      CHECK(r->first_pos == pos);
    }
    CHECK(r->first_pos + r->n_tokens == pos + 1);  // then samples the next token
    CHECK(s.find(2)->blocks.size() == static_cast<size_t>((pos + 1 + 3) / 4));
    s.finish(2);
    CHECK(bm.n_used() == 0);
  }
}
