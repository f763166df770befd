// Per-sequence output stage (sequence_output.hpp).
#include "engine/sequence_output.hpp"

#include <algorithm>
#include <utility>

#include "base/assert.hpp"

namespace vks::engine {

namespace {

bool only_special(const text::tokenizer& tok, std::span<const token_id> prompt) {
  return std::all_of(prompt.begin(), prompt.end(), [&](token_id t) { return tok.is_special(t); });
}

}  // namespace

void fill_logprob_texts(const text::tokenizer& tok, position_logprobs& lp) {
  lp.token.text = tok.token_text(lp.token.id);
  for (auto& t : lp.top) t.text = tok.token_text(t.id);
}

sequence_output::sequence_output(const text::tokenizer& tok, const sampling_params& params,
                                 std::span<const token_id> eos_ids, int seq, std::span<const token_id> prompt)
    : tok_(tok),
      decoder_(tok, params.skip_special_tokens, only_special(tok, prompt)),
      checker_(params, eos_ids),
      seq_(seq),
      n_prompt_(static_cast<int>(prompt.size())) {}

sequence_output::step sequence_output::on_token(token_id t, std::optional<position_logprobs> lp) {
  VKS_ASSERT(!finished_, "token after the sequence finished");
  ++n_generated_;
  auto out = checker_.on_token(t, decoder_.push(t), n_generated_);
  step st;
  st.token.seq = seq_;
  st.token.tokens = {t};
  st.token.text = std::move(out.text);
  if (lp) {
    fill_logprob_texts(tok_, *lp);
    st.token.logprobs.push_back(std::move(*lp));
  }
  st.token.n_completion_tokens = n_generated_;
  if (out.finish) {
    // A stop string drops what follows it; any other end releases an unfinished UTF-8 tail.
    const bool by_string = std::holds_alternative<std::string>(out.reason);
    st.finish = finish(*out.finish, std::move(out.reason), by_string ? std::string() : decoder_.flush());
  }
  return st;
}

finished_event sequence_output::abort() { return finish(finish_reason::abort, {}, {}); }

finished_event sequence_output::finish(finish_reason why, stop_reason sr, std::string text) {
  finished_ = true;
  finished_event ev;
  ev.seq = seq_;
  ev.reason = why;
  ev.stop = std::move(sr);
  ev.text = std::move(text);
  ev.seq_usage = {n_prompt_, n_generated_, 0};
  return ev;
}

}  // namespace vks::engine
