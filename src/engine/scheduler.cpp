// Continuous-batching plan: running first (oldest first), then admissions (round-robin
// across groups, FIFO within a group).
#include "engine/scheduler.hpp"

#include <algorithm>

#include "base/assert.hpp"

namespace vks::engine {

scheduler::scheduler(scheduler_config cfg, block_manager& blocks) : cfg_(cfg), blocks_(blocks) {
  VKS_ASSERT(cfg_.max_num_batched_tokens > 0 && cfg_.max_num_seqs > 0, "bad scheduler limits");
}

void scheduler::set_window_pool(block_manager* pool, int window) {
  VKS_ASSERT(seqs_.empty(), "window pool set after sequences were added");
  VKS_ASSERT(pool == nullptr || (window > 0 && pool->block_size() == blocks_.block_size()), "bad window pool");
  window_pool_ = pool;
  window_ = pool ? window : 0;
}

int scheduler::first_window_block(int pos) const { return std::max(0, pos - window_ + 1) / blocks_.block_size(); }

bool scheduler::grow(sequence_state& s, int n_tokens) {
  if (window_pool_) {
    const int need_w = window_pool_->blocks_needed(static_cast<int>(s.wblocks.size()), n_tokens);
    const int need = blocks_.blocks_needed(static_cast<int>(s.blocks.size()), n_tokens);
    if (need_w > window_pool_->n_free() || need > blocks_.n_free()) return false;
    VKS_ASSERT(window_pool_->grow(s.wblocks, n_tokens), "window pool grow");
  }
  return blocks_.grow(s.blocks, n_tokens);
}

void scheduler::release_all(sequence_state& s) {
  blocks_.release(s.blocks);
  s.hashes.clear();
  if (window_pool_) window_pool_->release(s.wblocks);
  s.whashes.clear();
}

// The full pool's longest cached chain, shortened until the window pool holds every block
// the next query's window reaches (a prefix whose window blocks were evicted is computed
// again from the last point where they are all cached).
int scheduler::acquire_prefix(sequence_state& s) {
  int n = blocks_.cached_prefix_blocks(s.tokens, s.cache_root);
  if (window_pool_) {
    const int B = blocks_.block_size();
    while (n > 0 && !window_pool_->has_window(s.tokens, n, first_window_block(n * B), s.cache_root)) --n;
    window_pool_->acquire_window(s.tokens, n, first_window_block(n * B), s.wblocks, s.whashes, s.cache_root);
  }
  return blocks_.acquire_cached_prefix(s.tokens, s.blocks, s.hashes, s.cache_root, n);
}

void scheduler::add(seq_id id, std::vector<std::int32_t> prompt, const seq_options& opt) {
  VKS_ASSERT(!prompt.empty(), "empty prompt");
  VKS_ASSERT(!seqs_.count(id), "duplicate sequence id");
  sequence_state s;
  s.id = id;
  s.n_prompt = static_cast<int>(prompt.size());
  s.tokens = std::move(prompt);
  s.arrival = next_arrival_++;
  s.gate = opt.gate;
  s.compute_all = opt.compute_all;
  s.group = opt.group;
  s.cache_root = opt.cache_root;
  s.forkable = opt.forkable;
  enqueue(seqs_.emplace(id, std::move(s)).first->second, false);
}

// Inserts by arrival within the group (a preempted sequence goes back ahead of younger
// ones). A group that had nothing waiting joins the rotation at the back; the group of a
// preempted sequence moves to the front, so preempted work resumes before new work.
void scheduler::enqueue(const sequence_state& s, bool front_group) {
  auto& q = waiting_[s.group];
  if (front_group) {
    if (!q.empty()) rr_.erase(std::find(rr_.begin(), rr_.end(), s.group));
    rr_.push_front(s.group);
  } else if (q.empty()) {
    rr_.push_back(s.group);
  }
  auto pos = std::find_if(q.rbegin(), q.rend(), [&](seq_id w) { return seqs_.at(w).arrival < s.arrival; });
  q.insert(pos.base(), s.id);
  ++n_waiting_;
}

void scheduler::dequeue(const sequence_state& s) {
  auto g = waiting_.find(s.group);
  if (g == waiting_.end()) return;
  auto it = std::find(g->second.begin(), g->second.end(), s.id);
  if (it == g->second.end()) return;
  g->second.erase(it);
  --n_waiting_;
  if (!g->second.empty()) return;
  waiting_.erase(g);
  rr_.erase(std::find(rr_.begin(), rr_.end(), s.group));
}

seq_id scheduler::admissible(std::uint64_t g) const {
  auto it = waiting_.find(g);
  if (it == waiting_.end()) return 0;
  for (seq_id id : it->second)
    if (gate_open(seqs_.at(id))) return id;
  return 0;
}

seq_id scheduler::next_waiting() const {
  for (std::uint64_t g : rr_)
    if (seq_id id = admissible(g)) return id;
  return 0;
}

const sequence_state* scheduler::find(seq_id id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : &it->second;
}

bool scheduler::gate_open(const sequence_state& s) const {
  if (s.gate == 0) return true;
  const sequence_state* g = find(s.gate);
  return g == nullptr || g->n_computed >= g->n_prompt;
}

void scheduler::preempt(sequence_state& s, step_plan& plan) {
  s.resume_pos = 0;
  if (cfg_.resume_preempted && !window_pool_ && s.n_computed > 0) {
    const int B = blocks_.block_size();
    const auto nb = static_cast<size_t>((s.n_computed + B - 1) / B);
    s.resume_pos = s.n_computed;
    plan.saves.push_back({s.id, s.n_computed, std::vector<block_id>(s.blocks.begin(), s.blocks.begin() + static_cast<std::ptrdiff_t>(nb))});
  }
  release_all(s);
  s.n_computed = 0;
  s.status = seq_status::waiting;
  ++s.n_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), s.id));
  enqueue(s, true);
  plan.preempted.push_back(s.id);
}

void scheduler::schedule_running(int& budget, step_plan& plan) {
  // Iterate over a snapshot: preemption removes the youngest entries from running_.
  std::vector<seq_id> order = running_;
  for (seq_id id : order) {
    auto it = seqs_.find(id);
    if (it == seqs_.end() || it->second.status != seq_status::running) continue;
    if (budget <= 0) break;
    sequence_state& s = it->second;
    int n = static_cast<int>(s.tokens.size()) - s.n_computed;
    if (n <= 0) continue;
    if (n > budget) {
      if (!cfg_.enable_chunked_prefill) continue;
      n = budget;
    }
    bool self_preempted = false;
    while (!grow(s, s.n_computed + n)) {
      seq_id victim = running_.back();  // youngest
      preempt(seqs_.at(victim), plan);
      if (victim == id) { self_preempted = true; break; }
    }
    if (self_preempted) continue;
    plan.seqs.push_back({id, s.n_computed, n, s.n_computed + n == static_cast<int>(s.tokens.size())});
    plan.n_tokens += n;
    budget -= n;
  }
}

// A preempted sequence with a saved copy: fresh blocks for every position it had computed
// plus its next chunk; the engine loads the copy into them (scheduled_seq::resumed).
bool scheduler::try_resume(sequence_state& s, int& budget, step_plan& plan) {
  int n = static_cast<int>(s.tokens.size()) - s.resume_pos;
  if (n > budget && cfg_.enable_chunked_prefill) n = budget;
  if (n > budget || !grow(s, s.resume_pos + n)) {
    release_all(s);
    return false;
  }
  s.n_computed = s.resume_pos;
  s.resume_pos = 0;
  s.status = seq_status::running;
  running_.push_back(s.id);
  plan.seqs.push_back({s.id, s.n_computed, n, s.n_computed + n == static_cast<int>(s.tokens.size()), true});
  plan.n_tokens += n;
  budget -= n;
  return true;
}

bool scheduler::try_admit(sequence_state& s, int& budget, step_plan& plan) {
  if (s.resume_pos >= static_cast<int>(s.tokens.size())) s.resume_pos = 0;
  if (s.resume_pos > 0) return try_resume(s, budget, plan);
  if (s.blocks.empty() && s.n_computed == 0 && !s.compute_all) {
    int cached = acquire_prefix(s);
    s.n_computed = cached;
    if (!s.admitted_once) s.n_cached = std::min(cached, s.n_prompt);
  }
  int n = static_cast<int>(s.tokens.size()) - s.n_computed;
  if (n > budget && cfg_.enable_chunked_prefill) n = budget;
  if (n > budget || !grow(s, s.n_computed + n)) {
    // Does not fit now: give back the cached prefix so running sequences can use it.
    release_all(s);
    s.n_computed = 0;
    return false;
  }
  s.status = seq_status::running;
  s.admitted_once = true;
  running_.push_back(s.id);
  plan.seqs.push_back({s.id, s.n_computed, n, s.n_computed + n == static_cast<int>(s.tokens.size())});
  plan.n_tokens += n;
  budget -= n;
  return true;
}

// One sequence per group in turn. A group whose admissible sequence does not fit stops
// admission for this step and stays first in the rotation: nobody overtakes it, so a
// long prompt is not starved by short ones. Groups whose sequences all wait on a gate
// (siblings of a prefill in progress) are passed over.
void scheduler::admit_waiting(int& budget, step_plan& plan) {
  std::size_t n_passed = 0;  // consecutive groups with nothing admissible
  while (!rr_.empty() && n_passed < rr_.size() && budget > 0 &&
         static_cast<int>(running_.size()) < cfg_.max_num_seqs) {
    const std::uint64_t g = rr_.front();
    const seq_id id = admissible(g);
    if (id == 0) {
      rr_.pop_front();
      rr_.push_back(g);
      ++n_passed;
      continue;
    }
    sequence_state& s = seqs_.at(id);
    if (!try_admit(s, budget, plan)) break;
    dequeue(s);  // may drop g from the rotation
    if (!rr_.empty() && rr_.front() == g) {
      rr_.pop_front();
      rr_.push_back(g);
    }
    n_passed = 0;
  }
}

step_plan scheduler::schedule() {
  step_plan plan;
  int budget = cfg_.max_num_batched_tokens;
  schedule_running(budget, plan);
  if (!plan.preempted.empty()) return plan;  // memory is short: no admissions this step
  admit_waiting(budget, plan);
  if (cfg_.fork_siblings && !window_pool_) fork_siblings(plan);
  return plan;
}

// Each planned sequence whose chunk completes its prompt (and samples its first token) takes
// its waiting forkable siblings (gated on it, the same prompt) along, as many as the sequence
// cap and one free block each (when the prompt ends inside a block) allow; the others wait
// and are admitted later like any sequence.
void scheduler::fork_siblings(step_plan& plan) {
  const int B = blocks_.block_size();
  const size_t n_planned = plan.seqs.size();
  for (size_t i = 0; i < n_planned; ++i) {
    const scheduled_seq e = plan.seqs[i];
    sequence_state& p = seqs_.at(e.id);
    if (!e.sample || e.first_pos + e.n_tokens != p.n_prompt || static_cast<int>(p.tokens.size()) != p.n_prompt) continue;
    auto q = waiting_.find(p.group);
    if (q == waiting_.end()) continue;
    const std::deque<seq_id> group = q->second;  // dequeue() edits the queue
    for (seq_id c : group) {
      sequence_state& s = seqs_.at(c);
      if (s.gate != p.id || !s.forkable || s.tokens != p.tokens || s.cache_root != p.cache_root) continue;
      const int full = p.n_prompt / B;
      const bool tail = p.n_prompt % B != 0;
      if (static_cast<int>(running_.size()) >= cfg_.max_num_seqs || (tail && blocks_.n_free() < 1)) return;
      blocks_.share(std::span(p.blocks).first(static_cast<size_t>(full)), s.blocks);
      forked_seq f{c, p.id, p.n_prompt};
      if (tail) {
        VKS_ASSERT(blocks_.grow(s.blocks, p.n_prompt), "fork: a free block was counted");
        f.tail_from = p.blocks[static_cast<size_t>(full)];
        f.tail_to = s.blocks.back();
      }
      dequeue(s);
      s.n_computed = p.n_prompt;
      s.n_cached = p.n_cached;
      s.status = seq_status::running;
      s.admitted_once = true;
      running_.push_back(c);
      plan.forks.push_back(f);
    }
  }
}

void scheduler::drop_resume(seq_id id) {
  auto it = seqs_.find(id);
  if (it != seqs_.end() && it->second.status == seq_status::waiting) it->second.resume_pos = 0;
}

void scheduler::update(const step_plan& plan, std::span<const std::pair<seq_id, std::int32_t>> sampled) {
  for (const auto& p : plan.seqs) {
    auto it = seqs_.find(p.id);
    if (it == seqs_.end()) continue;  // finished (aborted) while the step ran
    sequence_state& s = it->second;
    if (s.status != seq_status::running || s.n_computed != p.first_pos) continue;
    s.n_computed += p.n_tokens;
    blocks_.commit_full_blocks(s.tokens, s.n_computed, s.blocks, s.hashes, s.cache_root);
    if (window_pool_) {
      window_pool_->commit_full_blocks(s.tokens, s.n_computed, s.wblocks, s.whashes, s.cache_root);
      // The next query is at n_computed: blocks wholly before its window are not read again.
      window_pool_->release_before(s.wblocks, first_window_block(s.n_computed));
    }
  }
  for (const auto& f : plan.forks) {
    auto it = seqs_.find(f.id);
    if (it == seqs_.end()) continue;
    sequence_state& s = it->second;
    blocks_.commit_full_blocks(s.tokens, s.n_computed, s.blocks, s.hashes, s.cache_root);
  }
  for (const auto& [id, tok] : sampled) {
    auto it = seqs_.find(id);
    if (it == seqs_.end() || it->second.status != seq_status::running) continue;
    it->second.tokens.push_back(tok);
  }
}

void scheduler::finish(seq_id id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  sequence_state& s = it->second;
  release_all(s);
  if (s.status == seq_status::running) {
    running_.erase(std::find(running_.begin(), running_.end(), id));
  } else {
    dequeue(s);
  }
  seqs_.erase(it);
}

}  // namespace vks::engine
