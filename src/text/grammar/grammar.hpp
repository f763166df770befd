// A context-free grammar over Unicode code points: the one form every structured-output
// constraint (GBNF text, regular expressions, JSON schemas, choice lists) compiles to.
// Rules have alternatives; an alternative is a sequence of elements, each either a set of
// code points (ranges, possibly negated) or a reference to a rule. Repetition is expressed
// with helper rules (right recursion), so a grammar is plain BNF.
// builder::finish checks that every referenced rule is defined and that no rule is left
// recursive (directly or through rules that can match the empty string): the matcher
// (matcher.hpp) expands rules depth-first and would not terminate otherwise.
// Budgets (hostile requests): a builder refuses to grow past grammar_budget; over budget
// is an invalid_argument error naming the budget, returned by repeat() before anything
// is built or, for the element count, by finish() (the builder stops storing rules then).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"

namespace vks::text::grammar {

struct char_range {
  char32_t lo = 0, hi = 0;  // inclusive
};

struct element {
  enum class kind : std::uint8_t { chars, rule } k = kind::chars;
  bool negated = false;           // chars: matches code points in none of the ranges
  std::uint32_t rule = 0;         // rule: its id
  std::vector<char_range> ranges; // chars: sorted and merged by builder::finish

  static element ref(std::uint32_t r) { return element{kind::rule, false, r, {}}; }
  static element chars(std::vector<char_range> rs, bool neg = false) { return element{kind::chars, neg, 0, std::move(rs)}; }
  static element one(char32_t c) { return chars({{c, c}}); }
  static element any() { return chars({}, true); }  // every code point
};

using sequence = std::vector<element>;

struct rule {
  std::string name;
  std::vector<sequence> alts;
  bool defined = false;
};

// The finished grammar, flattened for the matcher: each alternative is a run of elements
// in `elems` ending with an `end` marker; rule r's alternatives start at alt_starts[r].
struct grammar {
  struct flat {
    enum class kind : std::uint8_t { chars, rule, end } k = kind::end;
    bool negated = false;
    std::uint32_t rule = 0;
    std::uint32_t r_begin = 0, r_end = 0;  // chars: ranges[r_begin, r_end)
  };
  std::vector<flat> elems;
  std::vector<char_range> ranges;
  std::vector<std::vector<std::uint32_t>> alt_starts;  // per rule
  std::vector<std::string> names;                      // per rule (errors, debugging)
  std::uint32_t root = 0;

  bool matches(const flat& e, char32_t c) const noexcept;
};

// Sorts ranges and merges the ones that overlap or touch.
void normalize_ranges(std::vector<char_range>& rs);

inline constexpr int k_unbounded = std::numeric_limits<int>::max();

// The size one compilation may reach. Defaults fit JSON schemas of hundreds of
// properties and long bounded strings; `((a?){1000}){1000}` or `a{0,10000}` repeated
// a few dozen times are refused.
struct grammar_budget {
  // Elements plus alternatives (the flattened grammar's size) over all rules.
  std::size_t max_elements = std::size_t{1} << 19;
  // What one repetition would cost unrolled: its item's expanded size times its bound,
  // where a referenced rule counts its own expanded size, so nested repetitions
  // multiply ((x{1000}){1000} costs 10^6) and are refused before they are built.
  std::uint64_t max_expanded = std::uint64_t{1} << 20;
};

// Groups nested deeper than this (parentheses in GBNF or regex) are refused: the
// parsers recurse once per level.
inline constexpr int k_max_group_depth = 200;

// Builds a grammar rule by rule. Rule names are unique; fresh() invents new ones.
class builder {
 public:
  explicit builder(grammar_budget budget = {}) : budget_(budget) {}

  // The id of rule `name`, declared (not yet defined) on first use.
  std::uint32_t rule_id(std::string_view name);
  // The id of rule `name` if it was declared or defined, without declaring it.
  std::optional<std::uint32_t> find(std::string_view name) const;
  // A new rule with a name derived from `hint` that no other rule has.
  std::uint32_t fresh(std::string_view hint);
  // Adds an alternative to rule r and marks it defined (an empty sequence matches "").
  // Past budget.max_elements the alternative is dropped and finish() fails.
  void add_alt(std::uint32_t r, sequence s);
  void define_empty(std::uint32_t r) { rules_[r].defined = true; }
  bool defined(std::uint32_t r) const { return rules_[r].defined; }

  // Helpers for compilers.
  static void append_literal(sequence& s, std::string_view text);  // one element per code point
  // A rule matching `item` between min and max times (max may be k_unbounded). Fails
  // with invalid_argument when max < min, a bound is over 10000, or the repetition is
  // over budget (grammar_budget), checked before any rule is built.
  result<element> repeat(const sequence& item, int min, int max, std::string_view hint);
  // A rule whose alternatives are `alts` (e.g. to wrap a group).
  element group(std::vector<sequence> alts, std::string_view hint);

  // appended (#24): any text that does not contain `stop` (non-empty, valid UTF-8), then
  // `stop` itself: the KMP automaton of `stop` as one rule per matched prefix.
  element text_until(std::string_view stop, std::string_view hint);

  // Checks and flattens, with `root` as the start rule.
  result<grammar> finish(std::uint32_t root) &&;

  // Elements plus alternatives added so far (grammar_budget::max_elements counts these).
  std::size_t n_elements() const noexcept { return n_elements_; }
  const grammar_budget& budget() const noexcept { return budget_; }

 private:
  std::uint64_t expanded_size(const element& e) const;
  unexpected over_elements() const;

  grammar_budget budget_;
  std::size_t n_elements_ = 0;
  bool over_budget_ = false;            // an alternative was dropped: finish() fails
  std::vector<std::uint64_t> expanded_; // per rule: its size with repetitions unrolled (saturating)
  std::vector<rule> rules_;
  std::unordered_map<std::string, std::uint32_t> by_name_;
  std::uint32_t n_helpers_ = 0;
};

}  // namespace vks::text::grammar
