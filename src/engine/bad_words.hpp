// vLLM's bad_words: words the output may not contain, as token sequences. A sequence's
// last token is masked whenever the tokens before it are the last tokens generated (a
// one-token word is always masked); so a word is banned as the model would spell it,
// not every way its text could be cut into tokens (vLLM's rule).
// Sequences per word (vLLM's update_from_tokenizer): the word without leading whitespace,
// encoded without BOS/EOS; and " " + that word when its encoding has the same number of
// tokens but a different first token (the spelling after a space, mid-sentence).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "engine/request.hpp"

namespace vks::text { class tokenizer; }

namespace vks::engine {

// Words whose text is empty after stripping leading whitespace give no sequence.
std::vector<std::vector<token_id>> bad_words_token_ids(const text::tokenizer& tok, std::span<const std::string> words);

// Sets the banned next tokens of logits [V] to -inf, given the tokens generated so far.
void apply_bad_words(std::span<float> logits, std::span<const std::vector<token_id>> words,
                     std::span<const token_id> generated) noexcept;

}  // namespace vks::engine
