// Per-choice bookkeeping (choice_tracker.hpp).
#include "api/choice_tracker.hpp"

#include <algorithm>

namespace vks::api {

choice_tracker::choice_tracker(int n_prompts, int n)
    : n_(n), choices_(static_cast<std::size_t>(n_prompts * n)), prompts_(static_cast<std::size_t>(n_prompts)) {}

std::optional<int> choice_tracker::running(int prompt, int seq) const noexcept {
  if (!has_prompt(prompt) || seq < 0 || seq >= n_) return std::nullopt;
  const int index = prompt * n_ + seq;
  if (choices_[static_cast<std::size_t>(index)].finished) return std::nullopt;
  return index;
}

void choice_tracker::on_token(int index, const engine::token_event& t) {
  choices_[static_cast<std::size_t>(index)].n_completion_tokens = t.n_completion_tokens;
}

void choice_tracker::on_finished(int index, int prompt, const engine::finished_event& f) {
  auto& c = choices_[static_cast<std::size_t>(index)];
  c.finished = true;
  c.n_completion_tokens = f.seq_usage.n_completion_tokens;
  ++n_finished_;
  auto& p = prompts_[static_cast<std::size_t>(prompt)];
  if (!p.counted) p.prompt_tokens = f.seq_usage.n_prompt_tokens;
  p.cached_tokens = std::max(p.cached_tokens, f.seq_usage.n_cached_tokens);
  p.counted = true;
}

usage_totals choice_tracker::usage() const {
  usage_totals u;
  for (const auto& p : prompts_) {
    u.prompt_tokens += p.prompt_tokens;
    u.cached_tokens += p.cached_tokens;
  }
  for (const auto& c : choices_)
    if (c.finished) u.completion_tokens += c.n_completion_tokens;
  return u;
}

}  // namespace vks::api
