// Incremental recognizer for a grammar (grammar.hpp): a pushdown automaton whose state is
// a set of stacks of grammar positions, advanced one code point at a time (the published
// stack-set method that llama.cpp's GBNF sampler also uses). Each stack's top is a
// character-set element the next code point may match; an empty stack means the text so
// far is a complete sentence. Stacks are hash-consed nodes (position, parent) in an arena
// owned by the matcher, so equal stacks are equal ids and a step allocates only new
// nodes; rule expansion is memoized per node.
// Bytes: text arrives as UTF-8 bytes (token pieces may end inside a character); the
// unfinished bytes are kept in the state and a byte is refused as soon as no character
// starting with the bytes so far could match.
// Caps (hostile grammars): the live stacks of a position and the arena (nodes plus
// memoized expansions) are bounded by matcher_limits. Past either, the matcher fails for
// good: error() says which cap, and every later byte is refused. Expansion is iterative,
// so no grammar can make it recurse.
// Not thread-safe; one matcher per sequence. Copyable (copies the arena).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/grammar/grammar.hpp"

namespace vks::text::grammar {

struct matcher_limits {
  std::size_t max_stacks = 1024;                 // live stacks at one position
  std::size_t max_arena = std::size_t{1} << 19;  // stack nodes + memoized expansion entries
};

class matcher {
 public:
  // A recognizer position: sorted, distinct stack ids (0 = the empty stack) plus the
  // bytes of an unfinished UTF-8 character.
  struct state {
    std::vector<std::uint32_t> stacks;
    std::string partial;
    bool operator==(const state&) const = default;
  };

  explicit matcher(std::shared_ptr<const grammar> g, matcher_limits limits = {});

  // A cap was exceeded (at construction or later): the matcher refuses everything and
  // error() names the cap ("structured output grammar is too ambiguous: ...").
  bool failed() const noexcept { return !error_.empty(); }
  const std::string& error() const noexcept { return error_; }

  // Feeds text; on refusal returns false and leaves the state unchanged.
  bool accept(std::string_view bytes);
  // The text so far is a whole sentence of the grammar.
  bool can_end() const noexcept { return !failed() && can_end(state_); }
  // Some continuation is possible (false once only the end is left, or failed).
  bool can_continue() const noexcept { return !failed() && can_continue(state_); }
  const state& current() const noexcept { return state_; }

  // Lower-level steps for token masks (token_mask.hpp). `out` may not alias `in`.
  // Returns false (a refusal) once the matcher has failed.
  bool advance_byte(const state& in, unsigned char b, state& out);
  static bool can_end(const state& s) noexcept { return s.partial.empty() && !s.stacks.empty() && s.stacks[0] == 0; }
  static bool can_continue(const state& s) noexcept { return !s.stacks.empty() && s.stacks.back() != 0; }

 private:
  struct node {
    std::uint32_t pos;
    std::uint32_t parent;
  };
  struct over_cap {};  // thrown inside, caught by the public entry points (never escapes)
  [[noreturn]] void exceed(std::string why);
  std::string too_many_stacks() const;
  void check_arena(std::size_t extra);
  // out += more; deduplicates and enforces max_stacks once out grows past twice the cap.
  void append_bounded(std::vector<std::uint32_t>& out, const std::vector<std::uint32_t>& more);
  bool advance_byte_unchecked(const state& in, unsigned char b, state& out);
  std::uint32_t intern(std::uint32_t pos, std::uint32_t parent);
  // Stack s with its top advanced past its element (pops finished alternatives).
  std::uint32_t after(std::uint32_t s);
  // Appends the stacks whose tops are character elements, reached from s by expanding
  // rule references (memoized; iterative, an explicit stack of frames).
  const std::vector<std::uint32_t>& expand(std::uint32_t s);
  void advance_char(const std::vector<std::uint32_t>& in, char32_t c, std::vector<std::uint32_t>& out);
  bool partial_feasible(const state& s, std::string_view partial) const;

  std::shared_ptr<const grammar> g_;
  matcher_limits limits_;
  std::string error_;                                         // non-empty: failed for good
  std::size_t n_expanded_ = 0;                                // entries over expanded_'s lists
  std::vector<node> nodes_;                                   // [0] is the empty stack
  std::unordered_map<std::uint64_t, std::uint32_t> interned_;
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> expanded_;
  state state_;
};

}  // namespace vks::text::grammar
