// Structured output for one sequence (constraint.hpp).
#include "engine/constraint.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "text/tokenizer/tokenizer.hpp"

namespace vks::engine {

constraint_vocab::constraint_vocab(const text::tokenizer& t, std::span<const token_id> eog_ids)
    : tok(t), index(t), eog(eog_ids.begin(), eog_ids.end()) {}

constraint::constraint(const output_constraint& c, const constraint_vocab& v)
    : vocab_(v), matcher_(c.grammar), after_(c.after), active_(c.after.empty()) {
  for (const auto& t : c.special_texts)
    if (auto id = v.tok.find(t); id && v.tok.is_special(*id)) specials_.emplace_back(*id, t);
}

void constraint::mask(std::span<float> row, bool at_text_start) {
  if (!active_) return;
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<std::pair<std::size_t, float>> eog;
  for (token_id e : vocab_.eog)
    if (e >= 0 && static_cast<std::size_t>(e) < row.size())
      eog.emplace_back(static_cast<std::size_t>(e), row[static_cast<std::size_t>(e)]);
  const auto& m = masks_.get(vocab_.index, matcher_, at_text_start);
  std::size_t n_allowed = m.n_allowed;
  // Control tokens the constraint names: allowed when the grammar accepts their text.
  std::vector<std::pair<std::size_t, float>> specials;
  for (const auto& [id, text] : specials_) {
    const auto i = static_cast<std::size_t>(id);
    if (i >= row.size()) continue;
    text::grammar::matcher::state a = matcher_.current(), b;
    bool ok = true;
    for (char ch : text) {
      if (!matcher_.advance_byte(a, static_cast<unsigned char>(ch), b)) {
        ok = false;
        break;
      }
      std::swap(a, b);
    }
    if (ok) specials.emplace_back(i, row[i]);
  }
  n_allowed += specials.size();
  for (std::size_t w = 0; w * 64 < row.size(); ++w) {
    const std::uint64_t bits = w < m.bits.size() ? m.bits[w] : 0;
    if (bits == ~std::uint64_t{0}) continue;
    const std::size_t end = std::min(row.size(), (w + 1) * 64);
    for (std::size_t i = w * 64; i < end; ++i)
      if (((bits >> (i % 64)) & 1u) == 0) row[i] = neg_inf;
  }
  // End-of-generation tokens: allowed once the text is complete; the only choice when
  // nothing else may follow (complete, or a dead end this vocabulary cannot leave).
  if (matcher_.can_end() || n_allowed == 0)
    for (auto [i, v] : eog) row[i] = n_allowed == 0 && !(v > neg_inf) ? 0.0f : v;
  for (auto [i, v] : specials) row[i] = v;
}

void constraint::advance(token_id t, bool at_text_start) {
  if (!active_) {
    waiting_ += vocab_.tok.token_text(t);
    const auto at = waiting_.find(after_);
    if (at == std::string::npos) {
      if (waiting_.size() > after_.size()) waiting_.erase(0, waiting_.size() - after_.size());
      return;
    }
    // The constraint starts behind the marker; whitespace right after it is free.
    std::string rest = waiting_.substr(at + after_.size());
    waiting_.clear();
    active_ = true;
    const auto b = rest.find_first_not_of(" \t\r\n");
    if (b != std::string::npos) (void)matcher_.accept(std::string_view(rest).substr(b));  // refused: starts afresh
    return;
  }
  if (vocab_.tok.is_special(t)) {
    for (const auto& [id, text] : specials_)
      if (id == t) (void)matcher_.accept(text);  // the mask allowed it: its text is accepted
    return;
  }
  std::string bytes = vocab_.tok.token_text(t);
  if (at_text_start && !bytes.empty() && bytes[0] == ' ') bytes.erase(0, 1);
  (void)matcher_.accept(bytes);  // the mask allowed t, so its bytes are accepted
}

}  // namespace vks::engine
