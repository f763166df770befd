// Per-sequence output stage (sequence_output.hpp).
#include "engine/sequence_output.hpp"

namespace vks::engine {

sequence_output::sequence_output(const text::tokenizer& tok, const sampling_params& params, int seq, int n_prompt,
                                 int n_cached)
    : tok_(tok),
      decoder_(tok, params.skip_special_tokens, false),
      checker_(params, tok.eog_ids()),
      seq_(seq),
      usage_{n_prompt, 0, n_cached} {}

void sequence_output::fill_texts(position_logprobs& lp) const {
  lp.token.text = tok_.token_text(lp.token.id);
  for (auto& t : lp.top) t.text = tok_.token_text(t.id);
}

event sequence_output::on_token(token_id t, std::optional<position_logprobs> lp) {
  VKS_ASSERT(!finished_, "token after the sequence finished");
  ++n_generated_;
  usage_.n_completion_tokens = n_generated_;
  std::string delta = decoder_.push(t);
  auto out = checker_.on_token(t, delta);
  if (lp) fill_texts(*lp);
  if (!out.finish) {
    token_event ev;
    ev.seq = seq_;
    ev.tokens = {t};
    ev.text = std::move(out.text);
    if (lp) ev.logprobs.push_back(std::move(*lp));
    ev.n_completion_tokens = n_generated_;
    return ev;
  }
  finished_ = true;
  finished_event ev;
  ev.seq = seq_;
  ev.reason = *out.finish;
  ev.stop = std::move(out.reason);
  ev.tokens = {t};
  ev.text = std::move(out.text);
  // Bytes of an unfinished character are released when the sequence ends by length.
  if (*out.finish == finish_reason::length) ev.text += decoder_.flush();
  if (lp) ev.logprobs.push_back(std::move(*lp));
  ev.seq_usage = usage_;
  return ev;
}

finished_event sequence_output::abort() {
  finished_ = true;
  finished_event ev;
  ev.seq = seq_;
  ev.reason = finish_reason::abort;
  ev.seq_usage = usage_;
  return ev;
}

}  // namespace vks::engine
