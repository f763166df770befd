// bad_words sequences and the mask step (bad_words.hpp).
#include "engine/bad_words.hpp"

#include <algorithm>
#include <limits>

#include "text/tokenizer/tokenizer.hpp"

namespace vks::engine {

std::vector<std::vector<token_id>> bad_words_token_ids(const text::tokenizer& tok, std::span<const std::string> words) {
  std::vector<std::vector<token_id>> out;
  for (const auto& w : words) {
    const auto start = w.find_first_not_of(" \t\r\n");
    if (start == std::string::npos) continue;
    const std::string word = w.substr(start);
    auto plain = tok.encode(word, /*add_special=*/false);
    if (plain.empty()) continue;
    auto spaced = tok.encode(" " + word, /*add_special=*/false);
    const bool other_spelling = !spaced.empty() && spaced.size() == plain.size() && spaced[0] != plain[0];
    out.push_back(std::move(plain));
    if (other_spelling) out.push_back(std::move(spaced));
  }
  return out;
}

void apply_bad_words(std::span<float> logits, std::span<const std::vector<token_id>> words,
                     std::span<const token_id> generated) noexcept {
  for (const auto& w : words) {
    if (w.empty() || w.size() > generated.size() + 1) continue;
    const std::size_t n_prefix = w.size() - 1;
    if (!std::equal(w.begin(), w.end() - 1, generated.end() - static_cast<std::ptrdiff_t>(n_prefix))) continue;
    const token_id last = w.back();
    if (last >= 0 && static_cast<std::size_t>(last) < logits.size())
      logits[static_cast<std::size_t>(last)] = -std::numeric_limits<float>::infinity();
  }
}

}  // namespace vks::engine
