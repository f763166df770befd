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

class matcher {
 public:
  // A recognizer position: sorted, distinct stack ids (0 = the empty stack) plus the
  // bytes of an unfinished UTF-8 character.
  struct state {
    std::vector<std::uint32_t> stacks;
    std::string partial;
    bool operator==(const state&) const = default;
  };

  explicit matcher(std::shared_ptr<const grammar> g);

  // Feeds text; on refusal returns false and leaves the state unchanged.
  bool accept(std::string_view bytes);
  // The text so far is a whole sentence of the grammar.
  bool can_end() const noexcept { return can_end(state_); }
  // Some continuation is possible (false once only the end is left).
  bool can_continue() const noexcept { return can_continue(state_); }
  const state& current() const noexcept { return state_; }

  // Lower-level steps for token masks (token_mask.hpp). `out` may not alias `in`.
  bool advance_byte(const state& in, unsigned char b, state& out);
  static bool can_end(const state& s) noexcept { return s.partial.empty() && !s.stacks.empty() && s.stacks[0] == 0; }
  static bool can_continue(const state& s) noexcept { return !s.stacks.empty() && s.stacks.back() != 0; }

 private:
  struct node {
    std::uint32_t pos;
    std::uint32_t parent;
  };
  std::uint32_t intern(std::uint32_t pos, std::uint32_t parent);
  // Stack s with its top advanced past its element (pops finished alternatives).
  std::uint32_t after(std::uint32_t s);
  // Appends the stacks whose tops are character elements, reached from s by expanding
  // rule references (memoized).
  const std::vector<std::uint32_t>& expand(std::uint32_t s);
  void advance_char(const std::vector<std::uint32_t>& in, char32_t c, std::vector<std::uint32_t>& out);
  bool partial_feasible(const state& s, std::string_view partial) const;

  std::shared_ptr<const grammar> g_;
  std::vector<node> nodes_;                                   // [0] is the empty stack
  std::unordered_map<std::uint64_t, std::uint32_t> interned_;
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> expanded_;
  state state_;
};

}  // namespace vks::text::grammar
