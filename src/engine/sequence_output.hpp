// The per-sequence output stage of the engine thread: turns each sampled token into the
// event to post (token_event, or finished_event when the token ends the sequence) by
// running the streaming detokenizer, the stop rules (stop_checker) and filling the token
// texts of logprobs. Pure CPU; the engine thread owns one per running sequence.
// Not thread-safe. Keeps a reference to the tokenizer, which must outlive it.
#pragma once

#include <optional>

#include "engine/request.hpp"
#include "engine/stop_matcher.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace vks::engine {

class sequence_output {
 public:
  // seq: index among the n siblings. n_prompt / n_cached: for usage.
  // The decoder treats the output as a continuation of the prompt (SentencePiece's
  // leading space is real text), like vLLM and llama-server.
  sequence_output(const text::tokenizer& tok, const sampling_params& params, int seq, int n_prompt, int n_cached);

  // One sampled token and (when logprobs were asked) its raw logprobs with empty texts.
  event on_token(token_id t, std::optional<position_logprobs> lp);
  // The sequence stopped from outside (client abort, shutdown).
  finished_event abort();
  bool finished() const noexcept { return finished_; }
  int n_generated() const noexcept { return n_generated_; }

 private:
  void fill_texts(position_logprobs& lp) const;

  const text::tokenizer& tok_;
  text::incremental_decoder decoder_;
  stop_checker checker_;
  int seq_;
  usage usage_;
  int n_generated_ = 0;
  bool finished_ = false;
};

}  // namespace vks::engine
