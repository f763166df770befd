// engine::constraint without the engine thread, on a hand-made vocabulary: the mask before
// sampling (refused tokens, EOS opened only when the text may end, forced at a dead end),
// the leading space a text start drops, advancing, the start behind a marker, and a
// matcher past its caps failing for good.
#include "catch.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "engine/constraint.hpp"
#include "small_vocab.hpp"
#include "text/grammar/parsers.hpp"

using namespace vks;
using namespace vks::engine;
using namespace vks::engine::test;

namespace {

output_constraint gbnf(const std::string& text, std::string after = {}) {
  auto g = text::grammar::parse_gbnf(text);
  REQUIRE(g.ok());
  return {std::make_shared<const text::grammar::grammar>(std::move(*g)), std::move(after)};
}

const constraint_vocab& vocab() {
  static const std::vector<token_id> eog{small_id::eos};
  static const constraint_vocab v(small_vocab(), eog);
  return v;
}

// A logits row of 1.0 everywhere (eos_logit at EOS), masked; returns the ids left finite.
std::vector<token_id> allowed(constraint& c, bool at_start, float eos_logit = 1.0f, std::vector<float>* out = nullptr) {
  std::vector<float> row(n_small, 1.0f);
  row[small_id::eos] = eos_logit;
  c.mask(row, at_start);
  std::vector<token_id> ids;
  for (int i = 0; i < n_small; ++i)
    if (row[static_cast<std::size_t>(i)] > -std::numeric_limits<float>::infinity()) ids.push_back(i);
  if (out) *out = row;
  return ids;
}

using ids = std::vector<token_id>;

}  // namespace

TEST_CASE("constraint: the mask follows the grammar; EOS only once the text is complete") {
  constraint c(gbnf(R"(root ::= "{" "\"a\"" ":" "1" "}")"), vocab());
  CHECK(c.active());
  // A text start drops the leading space of " {" (and " " is nothing there), so they are
  // allowed there and only there.
  CHECK(allowed(c, true) == ids{small_id::sp, small_id::lbrace, small_id::sp_lbrace});
  CHECK(allowed(c, false) == ids{small_id::lbrace});
  c.advance(small_id::sp_lbrace, true);
  CHECK(allowed(c, false) == ids{small_id::quote, small_id::quoted_a});
  for (token_id t : {small_id::quoted_a, small_id::colon, small_id::one}) c.advance(t, false);
  CHECK(allowed(c, false) == ids{small_id::rbrace});  // EOS stays closed: the text is not complete
  c.advance(small_id::eos, false);                    // special tokens add no text
  CHECK(allowed(c, false) == ids{small_id::rbrace});
  c.advance(small_id::rbrace, false);
  CHECK(c.can_end());
  // Complete and nothing may follow: EOS is the only choice, with its own logit ...
  std::vector<float> row;
  CHECK(allowed(c, false, 2.5f, &row) == ids{small_id::eos});
  CHECK(row[small_id::eos] == 2.5f);
  // ... or drawable (0) when something before masked it.
  CHECK(allowed(c, false, -std::numeric_limits<float>::infinity(), &row) == ids{small_id::eos});
  CHECK(row[small_id::eos] == 0.0f);
  CHECK_FALSE(c.failed());
}

TEST_CASE("constraint: EOS is opened, not forced, where the text may end or go on") {
  constraint c(gbnf(R"(root ::= "a"+)"), vocab());
  CHECK(allowed(c, false) == ids{small_id::a});
  c.advance(small_id::a, false);
  std::vector<float> row;
  CHECK(allowed(c, false, -3.0f, &row) == ids{small_id::eos, small_id::a});
  CHECK(row[small_id::eos] == -3.0f);  // its logit is kept: the sampler decides
}

TEST_CASE("constraint: a dead end the vocabulary cannot leave forces EOS") {
  constraint c(gbnf(R"(root ::= "a" "z")"), vocab());
  c.advance(small_id::a, false);
  CHECK_FALSE(c.can_end());
  CHECK(allowed(c, false, -std::numeric_limits<float>::infinity()) == ids{small_id::eos});
}

TEST_CASE("constraint: behind a marker, the text before it is free") {
  constraint c(gbnf(R"(root ::= "1")", "</think>"), vocab());
  CHECK_FALSE(c.active());
  CHECK(allowed(c, true).size() == static_cast<std::size_t>(n_small));  // nothing masked
  for (token_id t : {small_id::a, small_id::think_open, small_id::x}) c.advance(t, false);
  CHECK_FALSE(c.active());  // "</" then "x": not the marker
  c.advance(small_id::think_open, false);
  CHECK_FALSE(c.active());
  c.advance(small_id::think_close, false);  // the marker completes across two tokens
  CHECK(c.active());
  CHECK(allowed(c, false) == ids{small_id::one});
  c.advance(small_id::one, false);
  CHECK(allowed(c, false) == ids{small_id::eos});
}

TEST_CASE("constraint: a matcher past its caps fails for good") {
  // Every "a" doubles the live stacks (each remembers a different b/c suffix).
  constraint c(gbnf("root ::= \"a\" root \"b\" | \"a\" root \"c\" | \"a\"{40} \"x\"\n"), vocab());
  for (int i = 0; i < 40 && !c.failed(); ++i) {
    (void)allowed(c, false);
    if (!c.failed()) c.advance(small_id::a, false);
  }
  REQUIRE(c.failed());
  CHECK(c.error().find("too ambiguous") != std::string::npos);
  CHECK_FALSE(c.can_end());
}

TEST_CASE("constraint: control tokens named by special_texts are allowed where the grammar takes their text") {
  // "<s>" is a control token: without special_texts the grammar can never have it.
  constraint plain(gbnf(R"(root ::= "<s>" "a")"), vocab());
  const auto none = allowed(plain, false);
  CHECK(std::find(none.begin(), none.end(), small_id::bos) == none.end());
  auto oc = gbnf(R"(root ::= "<s>" "a")");
  oc.special_texts = {"<s>", "</s>", "no such token"};
  constraint c(oc, vocab());
  const auto first = allowed(c, false);
  CHECK(std::find(first.begin(), first.end(), small_id::bos) != first.end());
  CHECK(std::find(first.begin(), first.end(), small_id::a) == first.end());
  c.advance(small_id::bos, false);  // its text is fed to the grammar
  CHECK(allowed(c, false) == ids{small_id::a});
  c.advance(small_id::a, false);
  CHECK(c.can_end());
}
