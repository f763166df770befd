// Continuous-batching plan: running first (oldest first), then admissions (FIFO).
#include "engine/scheduler.hpp"

#include <algorithm>

#include "base/assert.hpp"

namespace vks::engine {

scheduler::scheduler(scheduler_config cfg, block_manager& blocks) : cfg_(cfg), blocks_(blocks) {
  VKS_ASSERT(cfg_.max_num_batched_tokens > 0 && cfg_.max_num_seqs > 0, "bad scheduler limits");
}

void scheduler::add(seq_id id, std::vector<std::int32_t> prompt, seq_id gate, bool compute_all) {
  VKS_ASSERT(!prompt.empty(), "empty prompt");
  VKS_ASSERT(!seqs_.count(id), "duplicate sequence id");
  sequence_state s;
  s.id = id;
  s.n_prompt = static_cast<int>(prompt.size());
  s.tokens = std::move(prompt);
  s.arrival = next_arrival_++;
  s.gate = gate;
  s.compute_all = compute_all;
  seqs_.emplace(id, std::move(s));
  waiting_.push_back(id);
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
  blocks_.release(s.blocks);
  s.hashes.clear();
  s.n_computed = 0;
  s.status = seq_status::waiting;
  ++s.n_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), s.id));
  // Back to the front, ahead of younger waiting sequences (keeps FIFO fairness).
  auto pos = std::find_if(waiting_.begin(), waiting_.end(),
                          [&](seq_id w) { return seqs_.at(w).arrival > s.arrival; });
  waiting_.insert(pos, s.id);
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
    while (!blocks_.grow(s.blocks, s.n_computed + n)) {
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

bool scheduler::try_admit(sequence_state& s, int& budget, step_plan& plan) {
  if (s.blocks.empty() && s.n_computed == 0 && !s.compute_all) {
    int cached = blocks_.acquire_cached_prefix(s.tokens, s.blocks, s.hashes);
    s.n_computed = cached;
    if (!s.admitted_once) s.n_cached = std::min(cached, s.n_prompt);
  }
  int n = static_cast<int>(s.tokens.size()) - s.n_computed;
  if (n > budget && cfg_.enable_chunked_prefill) n = budget;
  if (n > budget || !blocks_.grow(s.blocks, s.n_computed + n)) {
    // Does not fit now: give back the cached prefix so running sequences can use it.
    blocks_.release(s.blocks);
    s.hashes.clear();
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

step_plan scheduler::schedule() {
  step_plan plan;
  int budget = cfg_.max_num_batched_tokens;
  schedule_running(budget, plan);
  if (!plan.preempted.empty()) return plan;  // memory is short: no admissions this step
  for (auto it = waiting_.begin(); it != waiting_.end() && budget > 0;) {
    if (static_cast<int>(running_.size()) >= cfg_.max_num_seqs) break;
    sequence_state& s = seqs_.at(*it);
    if (!gate_open(s)) { ++it; continue; }  // sibling waits for the shared prefill
    if (!try_admit(s, budget, plan)) break;  // strict FIFO: nobody overtakes a blocked head
    it = waiting_.erase(it);
  }
  return plan;
}

void scheduler::update(const step_plan& plan, std::span<const std::pair<seq_id, std::int32_t>> sampled) {
  for (const auto& p : plan.seqs) {
    auto it = seqs_.find(p.id);
    if (it == seqs_.end()) continue;  // finished (aborted) while the step ran
    sequence_state& s = it->second;
    if (s.status != seq_status::running || s.n_computed != p.first_pos) continue;
    s.n_computed += p.n_tokens;
    blocks_.commit_full_blocks(s.tokens, s.n_computed, s.blocks, s.hashes);
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
  blocks_.release(s.blocks);
  if (s.status == seq_status::running) {
    running_.erase(std::find(running_.begin(), running_.end(), id));
  } else {
    auto w = std::find(waiting_.begin(), waiting_.end(), id);
    if (w != waiting_.end()) waiting_.erase(w);
  }
  seqs_.erase(it);
}

}  // namespace vks::engine
