// runner: a loaded model on a gpu::backend and its forward pass over a flattened batch of
// tokens from several sequences (prefill chunks and decode steps alike), the unit the
// continuous-batching scheduler drives. Logits are computed only for the requested rows
// (gathered before the final norm and lm head); per row the caller says what it needs back:
// the argmax id, the top-k candidates (device-side selection), or the whole f32 row. A step
// is one submission: the read-backs are recorded in it (gpu::backend::download_after).
// Ownership: the runner borrows the backend (which must outlive it) and owns the weights'
// and scratch tensors and the KV pool. Not thread-safe: one engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "gpu/backend.hpp"
#include "model/arch.hpp"
#include "model/config.hpp"
#include "model/kv_cache.hpp"
#include "model/model_file.hpp"
#include "model/state_cache.hpp"
#include "model/weights.hpp"

namespace vks::model {

// What the host needs of one logit row.
enum class logit_kind : uint8_t {
  full,    // the whole row (V floats)
  argmax,  // the id of the largest logit (lowest id on ties, NaN skipped: engine::argmax)
  top_k,   // the k largest (logit, id) pairs, descending, ties by lower id (NaN as -inf)
};
struct logit_need {
  logit_kind kind = logit_kind::full;
  int k = 0;  // top_k: candidates wanted, 1..k_max_candidates
};
inline constexpr int k_max_candidates = 256;

// The results of forward_step, row i for batch::logit_rows[i].
struct step_output {
  int64_t n_vocab = 0;
  int cand_k = 0;                    // candidates per top_k row (the step's largest k)
  std::vector<logit_need> needs;     // per row as computed (a row may be upgraded to full)
  std::vector<int32_t> slot;         // per row: its index among the rows of its kind
  std::vector<float> logits;         // full rows, V each
  std::vector<int32_t> tokens;       // argmax rows
  std::vector<float> cand_logits;    // top_k rows, cand_k each (padding: -inf with id V)
  std::vector<int32_t> cand_ids;

  std::span<float> row(size_t i) {
    return std::span(logits).subspan(static_cast<size_t>(slot[i]) * static_cast<size_t>(n_vocab), static_cast<size_t>(n_vocab));
  }
  int32_t token(size_t i) const { return tokens[static_cast<size_t>(slot[i])]; }
  std::span<const float> cand_values(size_t i) const {
    return std::span(cand_logits).subspan(static_cast<size_t>(slot[i]) * static_cast<size_t>(cand_k), static_cast<size_t>(cand_k));
  }
  std::span<const int32_t> cand_indices(size_t i) const {
    return std::span(cand_ids).subspan(static_cast<size_t>(slot[i]) * static_cast<size_t>(cand_k), static_cast<size_t>(cand_k));
  }
};

// One forward step. T tokens; S sequences; M logit rows.
struct batch {
  std::vector<int32_t> tokens;     // {T} token ids
  std::vector<int32_t> pos;        // {T} position of each token in its sequence
  std::vector<int32_t> seq;        // {T} index into block_tables
  // {S} block table of each sequence (kv_sequence::blocks), covering every position
  // used by its tokens. Views: the caller keeps them alive during forward().
  std::vector<std::span<const int32_t>> block_tables;
  // {S} with a window pool (kv_cache::n_window_blocks() > 0): each sequence's window table
  // (the sliding-window layers' blocks, same positions; entries < 0 = released, allowed
  // only before every token's window). Empty otherwise.
  std::vector<std::span<const int32_t>> window_tables;
  std::vector<int32_t> logit_rows; // {M} token indices (0..T-1) whose logits are wanted
  std::vector<logit_need> needs;   // {M} what each row needs; empty = every row full
  // Hybrid models (config().is_hybrid()): {S} each sequence's recurrent state slot
  // (state_cache::alloc); empty: slot s for sequence s. A sequence's tokens must then be
  // contiguous with consecutive positions, starting at 0 (the state restarts) or at the
  // slot's pos (it continues).
  std::vector<int32_t> state_slots;
  // Hybrid models, optional ({S} each when not empty): state_src[s] >= 0: sequence s's
  // state is restored from that checkpoint column first (its first position must be the
  // column's pos); checkpoint_pos[s] > 0: the state after that many tokens (a position
  // this batch computes) is also copied into column checkpoint_slot[s].
  std::vector<int32_t> state_src, checkpoint_pos, checkpoint_slot;

  // Appends tokens [pos0, pos0+n) of sequence `s` (already in block_tables).
  void add_tokens(int32_t s, std::span<const int32_t> ids, int32_t pos0, bool want_last_logits);
};

struct runner_options {
  int max_batch_tokens = 256;      // tokens per recorded step (larger batches are chunked)
  int max_seqs = 64;               // S per step
  int max_logit_rows = 64;         // M per recorded step (more rows split the batch)
  int max_context = 0;             // tokens per sequence; 0 = min(model context, 4096)
  int kv_blocks = 0;               // pool size in blocks; 0 = one max_context sequence + 1
  gpu::dtype kv_type = gpu::dtype::f32;
  // > 0 (models with sliding-window layers): those layers' KV in a pool of this many
  // blocks, indexed by batch::window_tables (kv_cache, "Window pool"); 0: one pool.
  int kv_window_blocks = 0;
  int state_slots = 0;             // hybrid models: recurrent state slots (0 = max_seqs)
  int state_checkpoints = 0;       // hybrid models: checkpoint columns (prefix caching)
  // Overlapped recording (#19, runner_overlap.cpp): while a decode step runs, record the next
  // one for the same sequences one position on, and submit that recording (its inputs
  // replaced) when the next step has its shape. -1 auto: on unless the device is a CPU
  // (lavapipe runs the step on the cores that would record); 0 off; 1 on.
  int overlap_record = -1;
};

class runner {
 public:
  static result<std::unique_ptr<runner>> load(const model_file& file, gpu::backend& be, const runner_options& opt = {});

  const model_config& config() const { return config_; }
  const model_weights& weights() const { return weights_; }
  kv_cache& kv() { return kv_; }
  state_cache& states() { return states_; }  // empty unless config().is_hybrid()
  int max_context() const { return max_context_; }
  gpu::backend& backend() { return be_; }

  // Runs the batch; returns per logit row what b.needs asks (a batch that does not fit one
  // recorded step returns every row full). Errors: errc::invalid_argument for an
  // inconsistent batch (ids, positions, tables, needs), the backend's errors otherwise.
  result<step_output> forward_step(const batch& b);
  // Every row full: M*V floats, row i holding the logits of token logit_rows[i].
  result<std::vector<float>> forward(const batch& b);
  // The whole logits row i of the last forward_step (for a row that got less), read from
  // the device; valid until the next forward. errc::internal when that step was split
  // (its rows were all returned full then).
  result<void> fetch_row(size_t i, std::span<float> out);
  // Runs the batch like forward() but returns, instead of logits, the final-normed hidden
  // state of each requested row (the lm head's input): M*C floats, row i for token
  // logit_rows[i] (C = config().n_embd). The embeddings path pools these on the host.
  result<std::vector<float>> forward_hidden(const batch& b);

 private:
  runner(gpu::backend& be, model_config c) : be_(be), config_(std::move(c)) {}
  result<void> alloc_scratch(const runner_options& opt);
  result<void> validate(const batch& b) const;
  result<void> validate_window(const batch& b) const;
  // Hybrid models: the batch's sequences continue their state slots (see batch::state_slots).
  result<void> validate_recurrent(const batch& b) const;
  int32_t state_slot(const batch& b, size_t s) const {
    return b.state_slots.empty() ? static_cast<int32_t>(s) : b.state_slots[s];
  }
  // seq_info rows (gpu::k_seq_info_fields each) of the sequences with tokens in [first, first+T).
  std::vector<int32_t> seq_info_of(const batch& b, int64_t first, int64_t T) const;
  // Tokens [first, first+count) of b; rows: (output index, token index) pairs inside it.
  // The embedding lookup and every layer of a chunk; s / ws: its views (main / window pool).
  void record_layers(step_views& s, step_views& ws, const gpu::tensor& tok);
  // park: record the chunk aside while the step before it runs (runner_overlap.cpp), not run it.
  result<void> run_chunk(const batch& b, int64_t first, int64_t count,
                         const std::vector<std::pair<size_t, int32_t>>& rows, step_output& out, bool park = false);
  // ops = false (a resumed parked step): only the read-backs' new targets, no kernels.
  void record_readback(const std::vector<std::pair<size_t, int32_t>>& rows, step_output& out,
                       std::vector<int32_t>& ids_host, std::vector<float>& cand_v_host, std::vector<int32_t>& cand_i_host,
                       bool ops = true);
  // Overlapped recording (runner_overlap.cpp). The key of a recorded chunk: everything its
  // ops depend on besides the uploaded values (T, S, table widths, rows and their needs).
  std::vector<int64_t> step_key(const batch& b, int64_t first, int64_t T, int64_t maxb, int64_t wmaxb,
                                const std::vector<std::pair<size_t, int32_t>>& rows, const step_output& out) const;
  // Starts chunk recording: resumes the parked step when its key is `key` (true), else begins one.
  bool begin_chunk(const std::vector<int64_t>& key, bool park);
  // Submits the recorded chunk; when b is a decode step that can continue, records its
  // successor aside while it runs.
  result<void> submit_chunk(const batch& b, int64_t first, int64_t T, const std::vector<std::pair<size_t, int32_t>>& rows,
                            const step_output& out);

  gpu::backend& be_;
  model_config config_;
  const architecture* arch_ = nullptr;
  model_weights weights_;
  kv_cache kv_;
  state_cache states_;
  int max_tokens_ = 0, max_rows_ = 0, max_seqs_ = 0, max_blocks_per_seq_ = 0, max_context_ = 0;
  // Scratch buffers sized for max_tokens_ (views are cut per step).
  gpu::tensor x_, h_, q_, k_, v_, qn_, kn_, att_, o_, gate_, up_, xr_, xn_, logits_;
  gpu::tensor tokens_, pos_, seq_, slots_, rows_, block_table_;
  gpu::tensor wslots_, wblock_table_;  // the window pool's slots and tables (if any)
  gpu::tensor argmax_, cand_v_, cand_i_;  // device-side selection of the logit rows
  gpu::tensor attn_gate_, ssm_x_, ssm_c_, ssm_z_, ssm_o_, ssm_beta_, ssm_alpha_, seq_info_;  // hybrid models only
  gpu::tensor moe_logits_, moe_ids_, moe_weights_, moe_act_, moe_act2_, moe_out_;  // MoE layers only
  gpu::tensor ple_, ple_tmp_, ple_gate_, ple_idx_;  // gemma4 per-layer embeddings only
  gpu::tensor shexp_g_, shexp_act_, shexp_up_;  // shared expert (config.n_ff_shexp > 0) only
  std::vector<int32_t> last_rows_;  // logits_ row of each output row of the last single-chunk step
  bool hidden_out_ = false;  // forward_hidden: rows are the final-normed hidden states
  bool overlap_ = false;     // runner_options::overlap_record resolved
  std::vector<int64_t> parked_key_;  // key of the step parked on the backend (empty: none)
};

// Greedy choice on host logits (lowest index on ties, like gpu::backend::argmax).
int32_t argmax(std::span<const float> logits);

}  // namespace vks::model
