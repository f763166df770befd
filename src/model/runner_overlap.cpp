// runner: overlapped recording (#19). While decode step N runs on the device, the engine
// thread records step N+1 for the same sequences one position on (the ops of a step depend
// on its shape, not on the uploaded ids, positions, slots and tables) and parks it on the
// backend (gpu::backend::begin_parked_step). When step N+1 comes with the same key, the
// runner resumes that recording: it repeats only the uploads (the real inputs replace the
// placeholder ones) and the read-back targets, then submits. Any other step drops it.
#include <algorithm>

#include "model/runner.hpp"

namespace vks::model {

std::vector<int64_t> runner::step_key(const batch& b, int64_t first, int64_t T, int64_t maxb, int64_t wmaxb,
                                      const std::vector<std::pair<size_t, int32_t>>& rows, const step_output& out) const {
  std::vector<int64_t> k = {first, T, static_cast<int64_t>(b.block_tables.size()), maxb, wmaxb,
                            static_cast<int64_t>(rows.size()), hidden_out_ ? 1 : 0, out.cand_k};
  for (const auto& [i, t] : rows) {
    k.push_back(static_cast<int64_t>(out.needs[i].kind));
    k.push_back(out.needs[i].k);
  }
  return k;
}

bool runner::begin_chunk(const std::vector<int64_t>& key, bool park) {
  if (park) {
    be_.begin_parked_step();
    parked_key_ = key;
    return false;
  }
  const bool resume = !parked_key_.empty() && parked_key_ == key && be_.resume_parked_step();
  parked_key_.clear();
  if (!resume) be_.begin_step();  // drops whatever was parked
  return resume;
}

result<void> runner::submit_chunk(const batch& b, int64_t first, int64_t T,
                                  const std::vector<std::pair<size_t, int32_t>>& rows, const step_output& out) {
  // A decode step (the whole batch one chunk, one token and one logit row per sequence)
  // whose sequences each have a next position inside their tables can be continued.
  const int B = kv_.block_size();
  const size_t S = b.block_tables.size();
  bool next = overlap_ && !hidden_out_ && !config_.is_hybrid() && first == 0 && static_cast<size_t>(T) == b.tokens.size() &&
              b.tokens.size() == S && rows.size() == S;
  std::vector<uint8_t> seen(S, 0);
  for (size_t t = 0; next && t < b.tokens.size(); ++t) {
    const auto s = static_cast<size_t>(b.seq[t]);
    const auto p1 = static_cast<size_t>(b.pos[t]) + 1;
    next = !seen[s] && p1 < b.block_tables[s].size() * static_cast<size_t>(B) &&
           (b.window_tables.empty() || (p1 < b.window_tables[s].size() * static_cast<size_t>(B) &&
                                        b.window_tables[s][p1 / static_cast<size_t>(B)] >= 0));
    seen[s] = 1;
  }
  if (!next) return be_.submit();
  VKS_TRY(be_.submit_launch());
  // Step N+1 as it will be if every sequence goes on: placeholder ids (the real ones are
  // step N's output), positions one on, the same tables, rows and needs.
  batch n = b;
  std::fill(n.tokens.begin(), n.tokens.end(), 0);
  for (auto& p : n.pos) ++p;
  step_output park_out;  // read-back targets of the parked recording (replaced when resumed)
  park_out.n_vocab = out.n_vocab;
  park_out.needs = out.needs;
  park_out.slot = out.slot;
  park_out.cand_k = out.cand_k;
  if (validate(n)) {
    park_out.logits.resize(out.logits.size());
    if (!run_chunk(n, 0, T, rows, park_out, true)) {  // (an upload refused: never resumed)
      be_.end_parked_step();
      parked_key_.clear();
    }
  }
  return be_.submit_wait();
}

}  // namespace vks::model
