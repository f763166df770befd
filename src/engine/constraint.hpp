// Structured output for one sequence (request.hpp output_constraint): the grammar matcher
// over the sequence's text, the mask of its logits row before sampling (tokens the
// grammar refuses; the end-of-generation tokens opened only when the text is complete and
// forced when nothing else may follow), advancing over each sampled token, and the start
// behind a marker such as "</think>". Pure CPU, no engine thread: tests drive it alone.
// Not thread-safe; one per constrained sequence. Past the matcher's caps it fails for good.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/request.hpp"
#include "text/grammar/matcher.hpp"
#include "text/grammar/token_mask.hpp"

namespace vks::text { class tokenizer; }

namespace vks::engine {

// What every constrained sequence reads: the tokens' bytes (the tokenizer, borrowed: it
// must outlive this), their sorted index, and the end-of-generation ids. Built once,
// on the first constrained request (a vocabulary walk); read-only afterwards.
struct constraint_vocab {
  constraint_vocab(const text::tokenizer& tok, std::span<const token_id> eog_ids);
  const text::tokenizer& tok;
  text::grammar::vocab_index index;
  std::vector<token_id> eog;
};

class constraint {
 public:
  // c.grammar must be set. v is borrowed and must outlive the constraint.
  constraint(const output_constraint& c, const constraint_vocab& v);

  // Before sampling. row [V] = one logits row. Tokens the grammar refuses become -inf
  // (special tokens included, except those of special_texts whose text the grammar
  // accepts); the end-of-generation tokens keep their logit only when
  // the text may end here, and when no other token is allowed they are the only choice
  // (a -inf one is set to 0 so the sampler can draw it). No-op before the start marker.
  // at_text_start: the detokenizer drops the next token's leading space (SentencePiece,
  // first token of a text), so the grammar sees the text without it.
  void mask(std::span<float> row, bool at_text_start);
  // After sampling t (the mask allowed it), with at_text_start as it was for mask().
  // Before the marker, the raw token bytes are searched for it; the grammar starts right
  // behind it, skipping whitespace. Special tokens (EOS) add no text.
  void advance(token_id t, bool at_text_start);

  // Active: the marker (if any) has been seen, the grammar holds the text.
  bool active() const noexcept { return active_; }
  // True once the matcher passed its caps (matcher_limits); error() says which. The
  // request must then fail: the mask means nothing any more.
  bool failed() const noexcept { return matcher_.failed(); }
  const std::string& error() const noexcept { return matcher_.error(); }
  bool can_end() const noexcept { return matcher_.can_end(); }

 private:
  const constraint_vocab& vocab_;
  text::grammar::matcher matcher_;
  text::grammar::mask_cache masks_;
  std::string after_;        // the start marker ("" = active from the first token)
  bool active_;
  std::string waiting_;      // before the marker: the tail of the text that may begin it
  // appended (#24): the control tokens of output_constraint::special_texts found in the
  // vocabulary, with their text: allowed when the grammar accepts that text.
  std::vector<std::pair<token_id, std::string>> specials_;
};

}  // namespace vks::engine
