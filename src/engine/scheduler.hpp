// The scheduler: pure continuous-batching policy (no I/O, no GPU). Each step it plans
// which sequences run and how many tokens each computes, under a token budget and a
// sequence cap: every running sequence first (decodes and unfinished prefill chunks,
// oldest first), then new sequences from the waiting queue, their prompts split into
// chunks (chunked prefill) so one long prompt never stalls everyone's decode.
// Fairness: waiting sequences belong to groups (one per client request: a request with
// many prompts and n > 1 is one group); admission takes one sequence per group in turn
// (round-robin, arrival order within a group), so a big request cannot starve small ones.
// When KV blocks run out it preempts the youngest running sequence (frees its blocks;
// it is recomputed later from its tokens, with the prefix cache's help).
// Sliding-window models (set_window_pool): the window layers' KV lives in a second pool
// with a second table per sequence; blocks that fall out of the window are released as the
// sequence advances, so a long sequence holds at most about (window + chunk) / B of them,
// and a cached prefix is reused only as far as the window pool still holds its window.
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
  // Hybrid models (#23): n > 1 siblings are forked from their first sibling's computed
  // prompt (step_plan::forks) instead of computing it again.
  bool fork_siblings = false;
  // Hybrid models (#23): a preempted sequence may resume where it stopped (its state and KV
  // saved by the engine, step_plan::saves) unless the engine drops the copy (drop_resume).
  bool resume_preempted = false;
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
  // Window pool (set_window_pool): the window layers' table, position p in wblocks[p / B],
  // k_no_block where the block fell out of the window; its chain (same values as hashes).
  std::vector<block_id> wblocks;
  std::vector<std::uint64_t> whashes;
  seq_status status = seq_status::waiting;
  std::uint64_t arrival = 0;         // FIFO order; kept across preemption
  int n_preemptions = 0;
  seq_id gate = 0;                   // admit only once sequence `gate` finished its prefill
  bool compute_all = false;          // never served from the prefix cache
  std::uint64_t group = 0;           // fairness group (round-robin admission)
  std::uint64_t cache_root = 0;      // prefix-cache chain root (block_manager::salt_root)
  bool forkable = false;             // may be forked from its gate's prompt (fork_siblings)
  int resume_pos = 0;                // preempted with a saved copy: resumes at this position
};

// How a new sequence is queued (scheduler::add).
struct seq_options {
  // Another sequence whose prompt is identical: this one waits until that one's prefill
  // is done so the full blocks come from the prefix cache (n > 1 siblings).
  seq_id gate = 0;
  // The prefix cache is not consulted, every prompt token is computed (prompt logprobs
  // need the logits of every position); its full blocks are still registered for others.
  bool compute_all = false;
  // Fairness key: groups with waiting sequences are admitted round-robin.
  std::uint64_t group = 0;
  // Root of the prefix-cache hash chain: sequences share cached blocks only with the
  // same root (0 = unsalted; block_manager::salt_root(cache_salt) otherwise).
  std::uint64_t cache_root = 0;
  // With fork_siblings: this sequence (whose gate has the same prompt) may be forked from
  // the gate's prompt in the step that completes it.
  bool forkable = false;
};

struct scheduled_seq {
  seq_id id = 0;
  int first_pos = 0;                 // n_computed before the step
  int n_tokens = 0;                  // tokens [first_pos, first_pos + n_tokens) computed now
  bool sample = false;               // chunk reaches the last token: sample the next one
  bool resumed = false;              // resumes at first_pos from the copy saved at its preemption
};

// A sibling forked from `parent`'s prompt in this step (fork_siblings): it samples its first
// token from the parent's last prompt row, and after the step the engine copies the parent's
// state to it and, when the prompt ends inside a block (tail_from >= 0), that block's KV into
// the sibling's own block tail_to; its full blocks are the parent's, shared.
struct forked_seq {
  seq_id id = 0, parent = 0;
  int n_prompt = 0;
  block_id tail_from = k_no_block, tail_to = k_no_block;
};

// A sequence preempted in this step that may resume at `pos` (resume_preempted) if the
// engine saves its state and the KV of `blocks` (its first ceil(pos / B) blocks, released
// now, overwritten only when the step runs) before the step.
struct preempted_save {
  seq_id id = 0;
  int pos = 0;
  std::vector<block_id> blocks;
};

struct step_plan {
  std::vector<scheduled_seq> seqs;
  std::vector<seq_id> preempted;     // sent back to waiting this step (blocks freed)
  std::vector<forked_seq> forks;     // fork_siblings: siblings forked this step
  std::vector<preempted_save> saves; // resume_preempted: preempted sequences to save
  int n_tokens = 0;
  bool empty() const { return seqs.empty(); }
};

class scheduler {
 public:
  scheduler(scheduler_config cfg, block_manager& blocks);

  // Queues a new sequence (see seq_options) behind the waiting ones of its group.
  void add(seq_id id, std::vector<std::int32_t> prompt, const seq_options& opt = {});
  // Sliding-window layers keep their KV in `pool` (same block size; outlives the
  // scheduler): keys older than `window` positions behind the next query are released.
  // Call before any add().
  void set_window_pool(block_manager* pool, int window);
  step_plan schedule();
  // After the step ran: advances computed tokens, registers full blocks in the prefix
  // cache and appends each sampled token ({seq, token} for every plan entry with sample).
  void update(const step_plan& plan, std::span<const std::pair<seq_id, std::int32_t>> sampled);
  // Removes a sequence in any state and frees its blocks. Unknown ids are ignored.
  void finish(seq_id id);
  // The engine has no saved copy of waiting sequence id (any more): it resumes like any
  // preempted sequence (prefix cache, else from position 0). Unknown ids are ignored.
  void drop_resume(seq_id id);

  const sequence_state* find(seq_id id) const;
  // The waiting sequence admission tries next, 0 if none.
  seq_id next_waiting() const;
  int n_waiting() const { return n_waiting_; }
  int n_running() const { return static_cast<int>(running_.size()); }
  const scheduler_config& config() const { return cfg_; }

 private:
  bool try_admit(sequence_state& s, int& budget, step_plan& plan);
  // Grows both tables to n_tokens positions, or neither (false: too few free blocks).
  bool grow(sequence_state& s, int n_tokens);
  void release_all(sequence_state& s);
  // The cached prefix both pools can serve: full blocks and the window before them.
  int acquire_prefix(sequence_state& s);
  // First block the window layers still need for a query at position `pos`.
  int first_window_block(int pos) const;
  void schedule_running(int& budget, step_plan& plan);
  void preempt(sequence_state& s, step_plan& plan);
  bool gate_open(const sequence_state& s) const;
  void enqueue(const sequence_state& s, bool front_group);
  void dequeue(const sequence_state& s);
  // The first sequence of group g's queue whose gate is open, 0 if none.
  seq_id admissible(std::uint64_t g) const;
  void admit_waiting(int& budget, step_plan& plan);
  bool try_resume(sequence_state& s, int& budget, step_plan& plan);
  void fork_siblings(step_plan& plan);

  scheduler_config cfg_;
  block_manager& blocks_;
  block_manager* window_pool_ = nullptr;
  int window_ = 0;
  std::map<seq_id, sequence_state> seqs_;
  std::vector<seq_id> running_;      // admission order
  // Waiting sequences per group, in arrival order; rr_ lists the groups that have any,
  // front = served next. A group moves to the back after each admission from it.
  std::map<std::uint64_t, std::deque<seq_id>> waiting_;
  std::deque<std::uint64_t> rr_;
  int n_waiting_ = 0;
  std::uint64_t next_arrival_ = 0;
};

}  // namespace vks::engine
