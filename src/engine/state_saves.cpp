// llm_engine's hybrid state cache moves (#23): n > 1 siblings forked from one computed prompt
// (the parent's state slot and prompt-tail KV block copied to each), and preempted sequences
// parked in host memory (state slot + KV rows) and loaded back into fresh ones on resume.
// Host memory is bounded by engine_options::max_saved_state_bytes, oldest copy dropped first.
#include <limits>

#include "engine/llm_engine.hpp"
#include "model/state_transfer.hpp"

namespace vks::engine {

result<void> llm_engine::save_preempted(const step_plan& plan) {
  auto& be = runner_.backend();
  const auto slot_bytes = static_cast<std::int64_t>(model::state_cache::slot_bytes(runner_.config()));
  const auto block_bytes = static_cast<std::int64_t>(model::kv_block_bytes(runner_.kv()));
  for (const auto& p : plan.saves) {
    auto it = state_slots_.find(p.id);
    const std::int64_t need = slot_bytes + block_bytes * static_cast<std::int64_t>(p.blocks.size());
    if (it == state_slots_.end() || runner_.states().pos(it->second) != p.pos || need > opt_.max_saved_state_bytes) {
      sched_.drop_resume(p.id);  // nothing usable to save: recomputed when it resumes
      continue;
    }
    while (saved_bytes_ + need > opt_.max_saved_state_bytes && !saved_.empty()) {
      seq_id victim = 0;
      std::uint64_t first = std::numeric_limits<std::uint64_t>::max();
      for (const auto& [id, c] : saved_)
        if (c.order < first) first = c.order, victim = id;
      drop_saved(victim);
      sched_.drop_resume(victim);
    }
    drop_saved(p.id);
    saved_seq s;
    s.pos = p.pos;
    s.order = ++n_saves_;
    VKS_TRY(model::save_state_slot(be, runner_.states(), it->second, s.state));
    VKS_TRY(model::save_kv_blocks(be, runner_.kv(), p.blocks, s.kv));
    saved_bytes_ += static_cast<std::int64_t>(s.state.size() + s.kv.size());
    saved_.emplace(p.id, std::move(s));
    ++metrics_.state_saves;
  }
  return {};
}

result<void> llm_engine::load_saved(seq_id id, std::int32_t slot, const sequence_state& st) {
  auto it = saved_.find(id);
  if (it == saved_.end()) return fail(errc::internal, "a resumed sequence has no saved state");
  const int B = runner_.kv().block_size();
  const auto nb = static_cast<size_t>((it->second.pos + B - 1) / B);
  if (nb > st.blocks.size()) return fail(errc::internal, "a resumed sequence has too few blocks for its saved state");
  auto& be = runner_.backend();
  VKS_TRY(model::load_state_slot(be, runner_.states(), slot, it->second.state, it->second.pos));
  VKS_TRY(model::load_kv_blocks(be, runner_.kv(), std::span(st.blocks).first(nb), it->second.kv));
  drop_saved(id);
  ++metrics_.state_restores;
  return {};
}

void llm_engine::drop_saved(seq_id id) {
  auto it = saved_.find(id);
  if (it == saved_.end()) return;
  saved_bytes_ -= static_cast<std::int64_t>(it->second.state.size() + it->second.kv.size());
  saved_.erase(it);
}

result<void> llm_engine::copy_forks(const step_plan& plan) {
  auto& be = runner_.backend();
  for (const auto& f : plan.forks) {
    auto parent = state_slots_.find(f.parent);
    if (parent == state_slots_.end() || runner_.states().pos(parent->second) != f.n_prompt)
      return fail(errc::internal, "a forked sequence's parent has no state at the end of its prompt");
    auto slot = state_slot_of(f.id);
    if (!slot) return fail(std::move(slot).error());
    VKS_TRY(model::copy_state_slot(be, runner_.states(), parent->second, *slot));
    if (f.tail_from >= 0) VKS_TRY(model::copy_kv_block(be, runner_.kv(), f.tail_from, f.tail_to));
    ++metrics_.forked_seqs;
  }
  return {};
}

}  // namespace vks::engine
