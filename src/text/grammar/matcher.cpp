#include "text/grammar/matcher.hpp"

#include <algorithm>

#include "base/assert.hpp"
#include "base/utf8.hpp"

namespace vks::text::grammar {

matcher::matcher(std::shared_ptr<const grammar> g) : g_(std::move(g)) {
  VKS_ASSERT(g_ != nullptr, "matcher needs a grammar");
  nodes_.push_back({0, 0});
  // The root rule as a one-element "stack" of a virtual reference: expand each of its
  // alternatives on top of the empty stack.
  std::vector<std::uint32_t> start;
  for (std::uint32_t a : g_->alt_starts[g_->root]) {
    std::uint32_t s = g_->elems[a].k == grammar::flat::kind::end ? 0 : intern(a, 0);
    const auto& e = expand(s);
    start.insert(start.end(), e.begin(), e.end());
  }
  std::sort(start.begin(), start.end());
  start.erase(std::unique(start.begin(), start.end()), start.end());
  state_.stacks = std::move(start);
}

std::uint32_t matcher::intern(std::uint32_t pos, std::uint32_t parent) {
  const std::uint64_t key = (static_cast<std::uint64_t>(pos) << 32) | parent;
  auto [it, fresh] = interned_.try_emplace(key, static_cast<std::uint32_t>(nodes_.size()));
  if (fresh) nodes_.push_back({pos, parent});
  return it->second;
}

std::uint32_t matcher::after(std::uint32_t s) {
  const node n = nodes_[s];
  const std::uint32_t next = n.pos + 1;
  return g_->elems[next].k == grammar::flat::kind::end ? n.parent : intern(next, n.parent);
}

const std::vector<std::uint32_t>& matcher::expand(std::uint32_t s) {
  if (auto it = expanded_.find(s); it != expanded_.end()) return it->second;
  std::vector<std::uint32_t> out;
  if (s == 0 || g_->elems[nodes_[s].pos].k == grammar::flat::kind::chars) {
    out.push_back(s);
  } else {
    // A rule reference: replace it by each alternative, continuing after it. Recursion
    // terminates because builder::finish rejects left recursion.
    const std::uint32_t cont = after(s);
    for (std::uint32_t a : g_->alt_starts[g_->elems[nodes_[s].pos].rule]) {
      const std::uint32_t t = g_->elems[a].k == grammar::flat::kind::end ? cont : intern(a, cont);
      const auto& sub = expand(t);  // unordered_map references survive rehashing
      out.insert(out.end(), sub.begin(), sub.end());
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return expanded_.insert_or_assign(s, std::move(out)).first->second;
}

void matcher::advance_char(const std::vector<std::uint32_t>& in, char32_t c, std::vector<std::uint32_t>& out) {
  out.clear();
  for (std::uint32_t s : in) {
    if (s == 0 || !g_->matches(g_->elems[nodes_[s].pos], c)) continue;
    const auto& e = expand(after(s));
    out.insert(out.end(), e.begin(), e.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

bool matcher::partial_feasible(const state& s, std::string_view partial) const {
  // The code points that start with these bytes span [lo, hi].
  const auto b0 = static_cast<unsigned char>(partial[0]);
  const int n = utf8::sequence_length(b0);
  static constexpr unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
  char32_t lo = b0 & lead_mask[n], hi = lo;
  for (int i = 1; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    const unsigned v = k < partial.size() ? (static_cast<unsigned char>(partial[k]) & 0x3fu) : 0u;
    lo = (lo << 6) | v;
    hi = (hi << 6) | (k < partial.size() ? v : 0x3fu);
  }
  static constexpr char32_t min_of_length[] = {0, 0, 0x80, 0x800, 0x10000};  // no overlong forms
  lo = std::max(lo, min_of_length[n]);
  hi = std::min<char32_t>(hi, 0x10ffff);
  if (lo > hi) return false;
  for (std::uint32_t id : s.stacks) {
    if (id == 0) continue;
    const auto& e = g_->elems[nodes_[id].pos];
    if (e.negated) {
      // Some code point of [lo, hi] lies outside the (sorted, disjoint) excluded ranges.
      char32_t next = lo;
      for (std::uint32_t r = e.r_begin; r < e.r_end && next <= hi; ++r) {
        const auto& x = g_->ranges[r];
        if (x.hi < next) continue;
        if (x.lo > next) return true;
        if (x.hi >= hi) {
          next = hi + 1;
          break;
        }
        next = x.hi + 1;
      }
      if (next <= hi) return true;
      continue;
    }
    for (std::uint32_t r = e.r_begin; r < e.r_end; ++r)
      if (g_->ranges[r].lo <= hi && lo <= g_->ranges[r].hi) return true;
  }
  return false;
}

bool matcher::advance_byte(const state& in, unsigned char b, state& out) {
  if (in.partial.empty() && b < 0x80) {
    advance_char(in.stacks, b, out.stacks);
    out.partial.clear();
    return !out.stacks.empty();
  }
  out.partial = in.partial;
  out.partial += static_cast<char>(b);
  const int need = utf8::sequence_length(static_cast<unsigned char>(out.partial[0]));
  if (need == 0) return false;
  if (out.partial.size() > 1 && (b & 0xc0) != 0x80) return false;
  if (out.partial.size() < static_cast<std::size_t>(need)) {
    out.stacks = in.stacks;
    return partial_feasible(out, out.partial);
  }
  char32_t cp = 0;
  if (utf8::decode(out.partial, cp) == 0) return false;
  out.partial.clear();
  advance_char(in.stacks, cp, out.stacks);
  return !out.stacks.empty();
}

bool matcher::accept(std::string_view bytes) {
  state cur = state_, next;
  for (char ch : bytes) {
    if (!advance_byte(cur, static_cast<unsigned char>(ch), next)) return false;
    std::swap(cur, next);
  }
  state_ = std::move(cur);
  return true;
}

}  // namespace vks::text::grammar
