#include "text/grammar/grammar.hpp"

#include <algorithm>
#include <limits>

#include "base/utf8.hpp"

namespace vks::text::grammar {

namespace {

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) noexcept {
  return b != 0 && a > std::numeric_limits<std::uint64_t>::max() / b ? std::numeric_limits<std::uint64_t>::max() : a * b;
}

bool in_ranges(const char_range* b, const char_range* e, char32_t c) noexcept {
  // Ranges are sorted and disjoint: binary search for the last range starting <= c.
  auto it = std::upper_bound(b, e, c, [](char32_t v, const char_range& r) { return v < r.lo; });
  return it != b && c <= (it - 1)->hi;
}

}  // namespace

void normalize_ranges(std::vector<char_range>& rs) {
  std::sort(rs.begin(), rs.end(), [](const char_range& a, const char_range& b) { return a.lo < b.lo; });
  std::vector<char_range> out;
  for (const auto& r : rs) {
    if (!out.empty() && r.lo <= out.back().hi + 1) out.back().hi = std::max(out.back().hi, r.hi);
    else out.push_back(r);
  }
  rs = std::move(out);
}

bool grammar::matches(const flat& e, char32_t c) const noexcept {
  return in_ranges(ranges.data() + e.r_begin, ranges.data() + e.r_end, c) != e.negated;
}

std::uint32_t builder::rule_id(std::string_view name) {
  auto it = by_name_.find(std::string(name));
  if (it != by_name_.end()) return it->second;
  auto id = static_cast<std::uint32_t>(rules_.size());
  rules_.push_back(rule{std::string(name), {}, false});
  expanded_.push_back(0);
  by_name_.emplace(std::string(name), id);
  return id;
}

std::optional<std::uint32_t> builder::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::uint32_t builder::fresh(std::string_view hint) {
  for (;;) {
    std::string name = std::string(hint) + "-" + std::to_string(++n_helpers_);
    if (!by_name_.contains(name)) return rule_id(name);
  }
}

std::uint64_t builder::expanded_size(const element& e) const {
  // A rule not defined yet (a forward or recursive reference) counts as one element.
  return e.k == element::kind::rule ? std::max<std::uint64_t>(expanded_[e.rule], 1) : 1;
}

unexpected builder::over_elements() const {
  return fail(errc::invalid_argument, "grammar is too large: over its budget of " +
                                          std::to_string(budget_.max_elements) + " rule elements");
}

void builder::add_alt(std::uint32_t r, sequence s) {
  rules_[r].defined = true;
  if (over_budget_ || n_elements_ + s.size() + 1 > budget_.max_elements) {
    over_budget_ = true;  // finish() reports it; stored rules stay within the budget
    return;
  }
  n_elements_ += s.size() + 1;
  std::uint64_t w = 1;
  for (const auto& e : s) w = sat_add(w, expanded_size(e));
  expanded_[r] = sat_add(expanded_[r], w);
  rules_[r].alts.push_back(std::move(s));
}

void builder::append_literal(sequence& s, std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    std::size_t n = utf8::decode(text.substr(i), cp);
    if (n == 0) {  // invalid byte: match it as the code point of the same value
      cp = static_cast<unsigned char>(text[i]);
      n = 1;
    }
    s.push_back(element::one(cp));
    i += n;
  }
}

element builder::group(std::vector<sequence> alts, std::string_view hint) {
  std::uint32_t r = fresh(hint);
  for (auto& a : alts) add_alt(r, std::move(a));
  define_empty(r);
  return element::ref(r);
}

element builder::text_until(std::string_view stop, std::string_view hint) {
  if (stop.empty()) return group({{}}, hint);
  sequence cps;
  append_literal(cps, stop);
  std::vector<char32_t> p;
  for (const auto& e : cps) p.push_back(e.ranges[0].lo);
  const std::size_t n = p.size();
  // next(k, c): the longest prefix of p that ends the text p[0..k) + c (k < n).
  auto next = [&](std::size_t k, char32_t c) {
    std::vector<char32_t> t(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(k));
    t.push_back(c);
    for (std::size_t len = std::min(n, t.size()); len > 0; --len)
      if (std::equal(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(len), t.end() - static_cast<std::ptrdiff_t>(len)))
        return len;
    return std::size_t{0};
  };
  std::vector<char32_t> alphabet = p;
  std::sort(alphabet.begin(), alphabet.end());
  alphabet.erase(std::unique(alphabet.begin(), alphabet.end()), alphabet.end());
  std::vector<std::uint32_t> state(n);
  for (auto& r : state) r = fresh(hint);
  for (std::size_t k = 0; k < n; ++k) {
    // The stop's next character: on, or done at the last one.
    if (k + 1 == n) add_alt(state[k], {element::one(p[k])});
    else add_alt(state[k], {element::one(p[k]), element::ref(state[k + 1])});
    std::vector<std::vector<char_range>> by_target(n);
    for (char32_t c : alphabet)
      if (c != p[k]) by_target[next(k, c)].push_back({c, c});
    for (std::size_t t = 0; t < n; ++t)
      if (!by_target[t].empty()) add_alt(state[k], {element::chars(std::move(by_target[t])), element::ref(state[t])});
    std::vector<char_range> known;
    for (char32_t c : alphabet) known.push_back({c, c});
    add_alt(state[k], {element::chars(std::move(known), true), element::ref(state[0])});
  }
  return element::ref(state[0]);
}

result<element> builder::repeat(const sequence& item, int min, int max, std::string_view hint) {
  constexpr int k_max_bound = 10000;
  if (min < 0 || max < min) return fail(errc::invalid_argument, "repetition bounds are out of order");
  if (min > k_max_bound || (max != k_unbounded && max > k_max_bound))
    return fail(errc::invalid_argument, "repetition bound over " + std::to_string(k_max_bound));
  // Budgets, before anything is built: the item unrolled `bound` times, and the helper
  // rules below (at most 4 elements per optional copy, one per required copy).
  std::uint64_t item_size = 0;
  for (const auto& e : item) item_size = sat_add(item_size, expanded_size(e));
  const auto bound = static_cast<std::uint64_t>(max == k_unbounded ? min + 1 : max);
  if (sat_mul(item_size, bound) > budget_.max_expanded)
    return fail(errc::invalid_argument,
                "grammar is too large: a repetition expands to over " + std::to_string(budget_.max_expanded) +
                    " elements (nested repetitions multiply)");
  const std::size_t helpers = 8 + item.size() + static_cast<std::size_t>(min) +
                              4 * static_cast<std::size_t>(max == k_unbounded ? 1 : max - min);
  if (over_budget_ || n_elements_ + helpers > budget_.max_elements) return over_elements();
  element x = item.size() == 1 ? item[0] : group({item}, hint);
  std::uint32_t r = fresh(hint);
  sequence body(static_cast<std::size_t>(min), x);
  if (max == k_unbounded) {
    std::uint32_t tail = fresh(hint);  // tail ::= x tail | ""
    add_alt(tail, {x, element::ref(tail)});
    add_alt(tail, {});
    body.push_back(element::ref(tail));
  } else if (max > min) {
    // t_j ::= x t_{j-1} | ""  (t_1 ::= x | ""): up to max - min more copies.
    std::uint32_t prev = fresh(hint);
    add_alt(prev, {x});
    add_alt(prev, {});
    for (int j = 2; j <= max - min; ++j) {
      std::uint32_t t = fresh(hint);
      add_alt(t, {x, element::ref(prev)});
      add_alt(t, {});
      prev = t;
    }
    body.push_back(element::ref(prev));
  }
  add_alt(r, std::move(body));
  return element::ref(r);
}

result<grammar> builder::finish(std::uint32_t root) && {
  if (over_budget_) return over_elements();
  const std::size_t n = rules_.size();
  if (root >= n) return fail(errc::invalid_argument, "grammar has no root rule");
  for (const auto& r : rules_) {
    if (!r.defined) return fail(errc::invalid_argument, "grammar rule `" + r.name + "` is used but not defined");
    for (const auto& a : r.alts)
      for (const auto& e : a)
        if (e.k == element::kind::rule && e.rule >= n) return fail(errc::internal, "grammar rule id out of range");
  }
  // Nullable rules (fixpoint), then the "may start with" graph must be acyclic.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (nullable[i]) continue;
      for (const auto& a : rules_[i].alts) {
        bool all = std::all_of(a.begin(), a.end(), [&](const element& e) {
          return e.k == element::kind::rule && nullable[e.rule];
        });
        if (all) {
          nullable[i] = changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<std::uint32_t>> starts(n);
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& a : rules_[i].alts)
      for (const auto& e : a) {
        if (e.k != element::kind::rule) break;
        starts[i].push_back(e.rule);
        if (!nullable[e.rule]) break;
      }
  std::vector<std::uint8_t> color(n, 0);  // 0 new, 1 on the DFS path, 2 done
  for (std::size_t s = 0; s < n; ++s) {
    if (color[s]) continue;
    std::vector<std::pair<std::uint32_t, std::size_t>> st{{static_cast<std::uint32_t>(s), 0}};
    color[s] = 1;
    while (!st.empty()) {
      auto& [v, next] = st.back();
      if (next == starts[v].size()) {
        color[v] = 2;
        st.pop_back();
        continue;
      }
      std::uint32_t w = starts[v][next++];
      if (color[w] == 1)
        return fail(errc::invalid_argument, "grammar rule `" + rules_[w].name + "` is left recursive");
      if (color[w] == 0) {
        color[w] = 1;
        st.emplace_back(w, 0);
      }
    }
  }

  grammar g;
  g.root = root;
  g.alt_starts.resize(n);
  g.names.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    g.names.push_back(rules_[i].name);
    for (auto& a : rules_[i].alts) {
      g.alt_starts[i].push_back(static_cast<std::uint32_t>(g.elems.size()));
      for (auto& e : a) {
        grammar::flat f;
        if (e.k == element::kind::rule) {
          f.k = grammar::flat::kind::rule;
          f.rule = e.rule;
        } else {
          f.k = grammar::flat::kind::chars;
          f.negated = e.negated;
          normalize_ranges(e.ranges);
          f.r_begin = static_cast<std::uint32_t>(g.ranges.size());
          g.ranges.insert(g.ranges.end(), e.ranges.begin(), e.ranges.end());
          f.r_end = static_cast<std::uint32_t>(g.ranges.size());
        }
        g.elems.push_back(f);
      }
      g.elems.push_back(grammar::flat{});  // end
    }
  }
  return g;
}

}  // namespace vks::text::grammar
