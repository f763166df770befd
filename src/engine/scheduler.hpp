// The scheduler: pure continuous-batching policy (no I/O, no GPU). Each step it plans
// which sequences run and how many tokens each computes, under a token budget and a
// sequence cap: every running sequence first (decodes and unfinished prefill chunks,
// oldest first), then new sequences from the waiting queue in arrival order, their prompts
// split into chunks (chunked prefill) so one long prompt never stalls everyone's decode.
// When KV blocks run out it preempts the youngest running sequence (frees its blocks;
// it is recomputed later from its tokens, with the prefix cache's help).
// Usage per step: plan = schedule(); run it; update(plan, sampled tokens); finish() ends
// a sequence at any time (stop, length, abort). Not thread-safe: engine thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "engine/block_manager.hpp"

namespace vks::engine {

using seq_id = std::uint64_t;

struct scheduler_config {
  int max_num_batched_tokens = 512;  // tokens computed per step (all sequences)
  int max_num_seqs = 64;             // sequences per step
  bool enable_chunked_prefill = true;
};

enum class seq_status { waiting, running };

struct sequence_state {
  seq_id id = 0;
  std::vector<std::int32_t> tokens;  // prompt then generated tokens
  int n_prompt = 0;
  int n_computed = 0;                // leading tokens whose KV rows are in the cache
  int n_cached = 0;                  // prompt tokens served by the prefix cache (first admission)
  bool admitted_once = false;
  std::vector<block_id> blocks;      // block table: position p in blocks[p / B]
  std::vector<std::uint64_t> hashes; // prefix-cache hash chain of the full blocks
  seq_status status = seq_status::waiting;
  std::uint64_t arrival = 0;         // FIFO order; kept across preemption
  int n_preemptions = 0;
  seq_id gate = 0;                   // admit only once sequence `gate` finished its prefill
  bool compute_all = false;          // never served from the prefix cache
};

struct scheduled_seq {
  seq_id id = 0;
  int first_pos = 0;                 // n_computed before the step
  int n_tokens = 0;                  // tokens [first_pos, first_pos + n_tokens) computed now
  bool sample = false;               // chunk reaches the last token: sample the next one
};

struct step_plan {
  std::vector<scheduled_seq> seqs;
  std::vector<seq_id> preempted;     // sent back to waiting this step (blocks freed)
  int n_tokens = 0;
  bool empty() const { return seqs.empty(); }
};

class scheduler {
 public:
  scheduler(scheduler_config cfg, block_manager& blocks);

  // Queues a new sequence. `gate` (optional): another sequence whose prompt is identical;
  // this one waits until that one's prefill is done so the full blocks come from the
  // prefix cache (n > 1 siblings share the prompt's blocks). `compute_all`: the prefix
  // cache is not consulted, every prompt token is computed (prompt logprobs need the
  // logits of every position); its full blocks are still registered for others.
  void add(seq_id id, std::vector<std::int32_t> prompt, seq_id gate = 0, bool compute_all = false);
  step_plan schedule();
  // After the step ran: advances computed tokens, registers full blocks in the prefix
  // cache and appends each sampled token ({seq, token} for every plan entry with sample).
  void update(const step_plan& plan, std::span<const std::pair<seq_id, std::int32_t>> sampled);
  // Removes a sequence in any state and frees its blocks. Unknown ids are ignored.
  void finish(seq_id id);

  const sequence_state* find(seq_id id) const;
  // The sequence at the head of the waiting queue, 0 if none.
  seq_id next_waiting() const { return waiting_.empty() ? 0 : waiting_.front(); }
  int n_waiting() const { return static_cast<int>(waiting_.size()); }
  int n_running() const { return static_cast<int>(running_.size()); }
  const scheduler_config& config() const { return cfg_; }

 private:
  bool try_admit(sequence_state& s, int& budget, step_plan& plan);
  void schedule_running(int& budget, step_plan& plan);
  void preempt(sequence_state& s, step_plan& plan);
  bool gate_open(const sequence_state& s) const;

  scheduler_config cfg_;
  block_manager& blocks_;
  std::map<seq_id, sequence_state> seqs_;
  std::vector<seq_id> running_;      // admission order
  std::deque<seq_id> waiting_;       // front = next to admit
  std::uint64_t next_arrival_ = 0;
};

}  // namespace vks::engine
