// The per-sequence output stage of the engine thread, and the only place that turns a
// sequence's sampled tokens into events: the streaming detokenizer, the stop rules
// (stop_checker: stop strings, stop ids, EOS, min/max_tokens), the token texts of
// logprobs, the finish, and the count of tokens generated (the one count; the sampler and
// the stop rules are given it). The event contract it implements is in request.hpp.
// Pure CPU. Not thread-safe; one per running sequence. The tokenizer is borrowed.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "engine/request.hpp"
#include "engine/stop_matcher.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace vks::engine {

// Sets the texts of a position's tokens (the raw bytes of each; may be partial UTF-8).
void fill_logprob_texts(const text::tokenizer& tok, position_logprobs& lp);

class sequence_output {
 public:
  // seq: index among the n siblings. eos_ids: the model's end-of-generation tokens.
  // The output continues the prompt (SentencePiece's leading space is real text, as in
  // vLLM and llama-server), unless the prompt is special tokens only (e.g. just BOS):
  // then it begins the text and that space is dropped, as decode(prompt + output) would.
  sequence_output(const text::tokenizer& tok, const sampling_params& params, std::span<const token_id> eos_ids, int seq,
                  std::span<const token_id> prompt);

  struct step {
    token_event token;                     // always sent: every sampled token has its own event
    std::optional<finished_event> finish;  // when this token ended the sequence: sent right after
  };
  // One sampled token and (when logprobs were asked) its raw logprobs with empty texts.
  // Must not be called once finished().
  step on_token(token_id t, std::optional<position_logprobs> lp);
  // The sequence stopped from outside (client abort, shutdown): no text, no tokens.
  finished_event abort();
  // Finished events carry usage {prompt, n_generated(), 0}: the cached-token count is the
  // scheduler's, and the engine fills it in.

  bool finished() const noexcept { return finished_; }
  int n_generated() const noexcept { return n_generated_; }
  // The detokenizer will drop the next token's leading space (a text start); the
  // structured-output constraint reads it before each token.
  bool at_text_start() const { return decoder_.drops_next_space(); }

 private:
  finished_event finish(finish_reason why, stop_reason sr, std::string text);

  const text::tokenizer& tok_;
  text::incremental_decoder decoder_;
  stop_checker checker_;
  int seq_;
  int n_prompt_;
  int n_generated_ = 0;
  bool finished_ = false;
};

}  // namespace vks::engine
