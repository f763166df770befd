// Which vocabulary tokens a grammar allows next. A vocab_index holds every token's bytes
// sorted, with the common-prefix length of neighbours, so one pass shares the matcher
// work of common prefixes and skips every token under a refused prefix (the effect of a
// trie without building one). Special (control) tokens are never allowed here: the
// caller allows the end-of-generation tokens when matcher::can_end() says so.
// Cost per step: O(bytes visited) matcher steps; about a vocabulary walk when the grammar
// allows almost anything (free text inside a JSON string), far less otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/grammar/matcher.hpp"

namespace vks::text { class tokenizer; }

namespace vks::text::grammar {

class vocab_index {
 public:
  // Every non-special token with non-empty text (tokenizer::token_text).
  explicit vocab_index(const tokenizer& tok);
  // Tests: explicit token texts (id = index; empty texts are never allowed).
  explicit vocab_index(const std::vector<std::string>& texts);

  std::int32_t n_vocab() const noexcept { return n_vocab_; }

  // allowed[id] = 1 when the token's bytes, fed after the matcher's current state, are
  // accepted. With strip_leading_space, a token's leading ' ' is dropped first (the
  // SentencePiece decoder drops it at the start of a text). Entries of special tokens and
  // tokens outside the index are 0. Returns the number of allowed tokens.
  std::size_t allowed(matcher& m, std::vector<std::uint8_t>& allowed, bool strip_leading_space = false) const;

 private:
  void build(std::vector<std::pair<std::string, std::int32_t>> toks);

  std::int32_t n_vocab_ = 0;
  std::vector<std::string> texts_;     // sorted bytes
  std::vector<std::int32_t> ids_;      // ids_[i] is texts_[i]'s token
  std::vector<std::uint32_t> lcp_;     // lcp_[i] = common prefix of texts_[i-1], texts_[i]
};

// The masks of one sequence's recent matcher states, packed one bit per token. States
// repeat (every character of a free JSON string leaves the same stacks), so most steps
// of a long constrained reply cost a lookup. Entries are keyed by matcher::state, whose
// stack ids belong to one matcher: use one cache per matcher.
class mask_cache {
 public:
  explicit mask_cache(std::size_t capacity = 16) : capacity_(capacity) {}

  struct mask {
    std::vector<std::uint64_t> bits;  // bit id%64 of word id/64: token id allowed
    std::size_t n_allowed = 0;
    bool allows(std::int32_t id) const noexcept {
      const auto i = static_cast<std::size_t>(id);
      return i / 64 < bits.size() && ((bits[i / 64] >> (i % 64)) & 1u) != 0;
    }
  };
  // The mask of m's current state (vocab_index::allowed), computed on a miss; the least
  // recently used entry makes room. The reference is valid until the next call.
  const mask& get(const vocab_index& idx, matcher& m, bool strip_leading_space);

  std::size_t hits() const noexcept { return hits_; }
  std::size_t misses() const noexcept { return misses_; }

 private:
  struct entry {
    matcher::state key;
    bool strip = false;
    mask value;
    std::uint64_t used = 0;
  };
  std::size_t capacity_;
  std::vector<entry> entries_;
  std::vector<std::uint8_t> scratch_;
  std::uint64_t clock_ = 0;
  std::size_t hits_ = 0, misses_ = 0;
};

}  // namespace vks::text::grammar
