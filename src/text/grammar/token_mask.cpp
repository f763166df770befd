#include "text/grammar/token_mask.hpp"

#include <algorithm>

#include "text/tokenizer/tokenizer.hpp"

namespace vks::text::grammar {

vocab_index::vocab_index(const tokenizer& tok) : n_vocab_(tok.n_vocab()) {
  std::vector<std::pair<std::string, std::int32_t>> toks;
  for (std::int32_t id = 0; id < n_vocab_; ++id) {
    if (tok.is_special(id)) continue;
    std::string t = tok.token_text(id);
    if (!t.empty()) toks.emplace_back(std::move(t), id);
  }
  build(std::move(toks));
}

vocab_index::vocab_index(const std::vector<std::string>& texts) : n_vocab_(static_cast<std::int32_t>(texts.size())) {
  std::vector<std::pair<std::string, std::int32_t>> toks;
  for (std::size_t i = 0; i < texts.size(); ++i)
    if (!texts[i].empty()) toks.emplace_back(texts[i], static_cast<std::int32_t>(i));
  build(std::move(toks));
}

void vocab_index::build(std::vector<std::pair<std::string, std::int32_t>> toks) {
  std::sort(toks.begin(), toks.end());
  texts_.reserve(toks.size());
  ids_.reserve(toks.size());
  lcp_.reserve(toks.size());
  for (auto& [t, id] : toks) {
    std::uint32_t l = 0;
    if (!texts_.empty()) {
      const std::string& p = texts_.back();
      while (l < p.size() && l < t.size() && p[l] == t[l]) ++l;
    }
    lcp_.push_back(l);
    texts_.push_back(std::move(t));
    ids_.push_back(id);
  }
}

std::size_t vocab_index::allowed(matcher& m, std::vector<std::uint8_t>& allowed, bool strip_leading_space) const {
  allowed.assign(static_cast<std::size_t>(n_vocab_), 0);
  std::size_t n_allowed = 0;
  if (strip_leading_space) {
    // Rare (the first token of a text): walk every token on its own.
    matcher::state a, b;
    for (std::size_t i = 0; i < texts_.size(); ++i) {
      std::string_view t = texts_[i];
      if (!t.empty() && t[0] == ' ') t.remove_prefix(1);
      a = m.current();
      bool ok = true;
      for (char ch : t) {
        if (!m.advance_byte(a, static_cast<unsigned char>(ch), b)) {
          ok = false;
          break;
        }
        std::swap(a, b);
      }
      if (ok) {
        allowed[static_cast<std::size_t>(ids_[i])] = 1;
        ++n_allowed;
      }
    }
    return n_allowed;
  }
  // st[k] is the state after the first k bytes of the current token; `valid` of them are
  // valid for the last token walked.
  std::vector<matcher::state> st(1);
  st[0] = m.current();
  std::size_t valid = 0;
  std::size_t i = 0;
  while (i < texts_.size()) {
    const std::string& t = texts_[i];
    if (st.size() < t.size() + 1) st.resize(t.size() + 1);
    std::size_t k = std::min<std::size_t>(lcp_[i], valid);
    bool dead = false;
    for (; k < t.size(); ++k)
      if (!m.advance_byte(st[k], static_cast<unsigned char>(t[k]), st[k + 1])) {
        dead = true;
        break;
      }
    if (!dead) {
      allowed[static_cast<std::size_t>(ids_[i])] = 1;
      ++n_allowed;
      valid = t.size();
      ++i;
      continue;
    }
    // Prefix t[0..k] is refused: so is every following token that shares it.
    valid = k;
    ++i;
    while (i < texts_.size() && lcp_[i] >= k + 1) ++i;
  }
  return n_allowed;
}

const mask_cache::mask& mask_cache::get(const vocab_index& idx, matcher& m, bool strip_leading_space) {
  ++clock_;
  const matcher::state& key = m.current();
  for (auto& e : entries_)
    if (e.strip == strip_leading_space && e.key == key) {
      e.used = clock_;
      ++hits_;
      return e.value;
    }
  ++misses_;
  entry* slot = nullptr;
  if (entries_.size() < capacity_) {
    slot = &entries_.emplace_back();
  } else {
    slot = &*std::min_element(entries_.begin(), entries_.end(),
                              [](const entry& a, const entry& b) { return a.used < b.used; });
  }
  slot->value.n_allowed = idx.allowed(m, scratch_, strip_leading_space);
  slot->value.bits.assign((scratch_.size() + 63) / 64, 0);
  for (std::size_t i = 0; i < scratch_.size(); ++i)
    if (scratch_[i]) slot->value.bits[i / 64] |= std::uint64_t{1} << (i % 64);
  slot->key = key;
  slot->strip = strip_leading_space;
  slot->used = clock_;
  return slot->value;
}

}  // namespace vks::text::grammar
