#include "text/grammar/matcher.hpp"

#include <algorithm>

#include "base/assert.hpp"
#include "base/utf8.hpp"

namespace vks::text::grammar {

namespace {

// Sorts and deduplicates ids.
void sort_unique(std::vector<std::uint32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

}  // namespace

matcher::matcher(std::shared_ptr<const grammar> g, matcher_limits limits) : g_(std::move(g)), limits_(limits) {
  VKS_ASSERT(g_ != nullptr, "matcher needs a grammar");
  nodes_.push_back({0, 0});
  // The root rule as a one-element "stack" of a virtual reference: expand each of its
  // alternatives on top of the empty stack.
  std::vector<std::uint32_t> start;
  try {
    for (std::uint32_t a : g_->alt_starts[g_->root]) {
      std::uint32_t s = g_->elems[a].k == grammar::flat::kind::end ? 0 : intern(a, 0);
      const auto& e = expand(s);
      append_bounded(start, e);
    }
    sort_unique(start);
    if (start.size() > limits_.max_stacks) exceed(too_many_stacks());
  } catch (const over_cap&) {
    start.clear();  // failed(): every byte is refused
  }
  state_.stacks = std::move(start);
}

std::string matcher::too_many_stacks() const {
  return "structured output grammar is too ambiguous: over " + std::to_string(limits_.max_stacks) +
         " live stacks at one position";
}

void matcher::exceed(std::string why) {
  error_ = std::move(why);
  throw over_cap{};
}

void matcher::check_arena(std::size_t extra) {
  if (nodes_.size() + n_expanded_ + extra > limits_.max_arena)
    exceed("structured output grammar is too large to match: over " + std::to_string(limits_.max_arena) +
           " matcher nodes");
}

void matcher::append_bounded(std::vector<std::uint32_t>& out, const std::vector<std::uint32_t>& more) {
  out.insert(out.end(), more.begin(), more.end());
  // Duplicates are many (alternatives share continuations): squeeze them out before
  // judging the size, so memory stays within a few times the cap.
  if (out.size() > 2 * limits_.max_stacks) {
    sort_unique(out);
    if (out.size() > limits_.max_stacks) exceed(too_many_stacks());
  }
}

std::uint32_t matcher::intern(std::uint32_t pos, std::uint32_t parent) {
  const std::uint64_t key = (static_cast<std::uint64_t>(pos) << 32) | parent;
  if (auto it = interned_.find(key); it != interned_.end()) return it->second;
  check_arena(1);
  const auto id = static_cast<std::uint32_t>(nodes_.size());
  interned_.emplace(key, id);
  nodes_.push_back({pos, parent});
  return id;
}

std::uint32_t matcher::after(std::uint32_t s) {
  const node n = nodes_[s];
  const std::uint32_t next = n.pos + 1;
  return g_->elems[next].k == grammar::flat::kind::end ? n.parent : intern(next, n.parent);
}

const std::vector<std::uint32_t>& matcher::expand(std::uint32_t s0) {
  if (auto it = expanded_.find(s0); it != expanded_.end()) return it->second;
  // Depth-first over "replace the rule reference on top by each alternative", post-order
  // so that each node's list is memoized once its children's are. The references form
  // a DAG (builder::finish rejects left recursion); frames on the path are distinct
  // nodes, so the explicit stack is bounded by the arena.
  struct frame {
    std::uint32_t s = 0, cont = 0;
    std::size_t next_alt = 0;
    std::vector<std::uint32_t> out;
  };
  auto is_leaf = [&](std::uint32_t s) { return s == 0 || g_->elems[nodes_[s].pos].k == grammar::flat::kind::chars; };
  std::vector<frame> path;
  auto push = [&](std::uint32_t s) {
    check_arena(path.size());
    frame f;
    f.s = s;
    if (!is_leaf(s)) f.cont = after(s);
    path.push_back(std::move(f));
  };
  push(s0);
  for (;;) {
    frame& f = path.back();
    if (is_leaf(f.s)) {
      f.out.push_back(f.s);
    } else {
      const auto& alts = g_->alt_starts[g_->elems[nodes_[f.s].pos].rule];
      if (f.next_alt < alts.size()) {
        const std::uint32_t a = alts[f.next_alt++];
        const std::uint32_t t = g_->elems[a].k == grammar::flat::kind::end ? f.cont : intern(a, f.cont);
        if (auto it = expanded_.find(t); it != expanded_.end()) append_bounded(f.out, it->second);
        else push(t);  // f is invalid from here
        continue;
      }
      sort_unique(f.out);
      if (f.out.size() > limits_.max_stacks) exceed(too_many_stacks());
    }
    check_arena(f.out.size());
    n_expanded_ += f.out.size();
    const auto& memo = expanded_.insert_or_assign(f.s, std::move(f.out)).first->second;  // survives rehashing
    path.pop_back();
    if (path.empty()) return memo;
    append_bounded(path.back().out, memo);
  }
}

void matcher::advance_char(const std::vector<std::uint32_t>& in, char32_t c, std::vector<std::uint32_t>& out) {
  out.clear();
  for (std::uint32_t s : in) {
    if (s == 0 || !g_->matches(g_->elems[nodes_[s].pos], c)) continue;
    append_bounded(out, expand(after(s)));
  }
  sort_unique(out);
  if (out.size() > limits_.max_stacks) exceed(too_many_stacks());
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
  if (failed()) return false;
  try {
    return advance_byte_unchecked(in, b, out);
  } catch (const over_cap&) {
    return false;  // failed() from now on
  }
}

bool matcher::advance_byte_unchecked(const state& in, unsigned char b, state& out) {
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
