// The per-choice bookkeeping every response builder shares (chat, completions, LMI;
// streaming and not), and the one event dispatch over it. Choices are indexed
// prompt * n + seq (one engine request per prompt). The tracker owns: the bounds check of
// an event's (prompt, seq), each choice's finished flag (a choice finishes once; later
// events for it are dropped), the completion tokens of each choice so far, usage (each
// prompt's prompt and cached tokens counted once, on its first finished choice, cached
// as the largest any of its sequences reported; completion tokens summed over choices),
// and the request's error (after which, or after every choice finished, it is done).
// Not thread-safe; one per request.
#pragma once

#include <optional>
#include <variant>
#include <vector>

#include "api/response_common.hpp"
#include "base/error.hpp"
#include "engine/request.hpp"

namespace vks::api {

class choice_tracker {
 public:
  choice_tracker(int n_prompts, int n);

  // The index of (prompt, seq) while that choice is running; nullopt when out of range
  // or finished.
  std::optional<int> running(int prompt, int seq) const noexcept;
  bool has_prompt(int prompt) const noexcept { return prompt >= 0 && prompt < static_cast<int>(prompts_.size()); }
  void on_token(int index, const engine::token_event& t);
  void on_finished(int index, int prompt, const engine::finished_event& f);
  void fail(vks::error e) { error_ = std::move(e); }

  bool done() const noexcept { return error_.has_value() || n_finished_ == static_cast<int>(choices_.size()); }
  const std::optional<vks::error>& error() const noexcept { return error_; }
  bool any_finished() const noexcept { return n_finished_ > 0; }
  int n_completion_tokens(int index) const { return choices_[static_cast<std::size_t>(index)].n_completion_tokens; }
  usage_totals usage() const;

 private:
  struct choice {
    int n_completion_tokens = 0;
    bool finished = false;
  };
  struct prompt_usage {
    int prompt_tokens = 0;
    int cached_tokens = 0;
    bool counted = false;
  };
  int n_;
  std::vector<choice> choices_;
  std::vector<prompt_usage> prompts_;
  int n_finished_ = 0;
  std::optional<vks::error> error_;
};

// The one event dispatch: routes `ev` of `prompt` through the tracker to the builder's
// handlers `h`, an overload set of
//   h(int index, const token_event&)     a running choice's text
//   h(int index, const finished_event&)  once per choice, after the tracker counted it
//   h(int prompt, const prompt_logprobs_event&)
//   h(const error_event&)                after the tracker recorded the error
// Events for a done request, an unknown prompt or seq, or a finished choice are dropped.
template <class H>
void route_event(choice_tracker& tr, int prompt, const engine::event& ev, H&& h) {
  if (tr.done() || !tr.has_prompt(prompt)) return;
  if (const auto* t = std::get_if<engine::token_event>(&ev)) {
    auto i = tr.running(prompt, t->seq);
    if (!i) return;
    tr.on_token(*i, *t);
    h(*i, *t);
  } else if (const auto* f = std::get_if<engine::finished_event>(&ev)) {
    auto i = tr.running(prompt, f->seq);
    if (!i) return;
    tr.on_finished(*i, prompt, *f);
    h(*i, *f);
  } else if (const auto* p = std::get_if<engine::prompt_logprobs_event>(&ev)) {
    h(prompt, *p);
  } else if (const auto* e = std::get_if<engine::error_event>(&ev)) {
    tr.fail(e->err);
    h(*e);
  }
}

// Builds an overload set from lambdas (for route_event).
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

}  // namespace vks::api
