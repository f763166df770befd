// Stop strings across token boundaries (every split of the text into tokens), the hold-back
// rule, and the per-token rules (EOS, stop_token_ids, min_tokens, max_tokens).
#include "catch.hpp"

#include <optional>
#include <string>
#include <vector>

#include "engine/stop_matcher.hpp"

using namespace vks::engine;

namespace {

struct outcome {
  std::string text;
  std::optional<std::string> match;
  bool operator==(const outcome&) const = default;
};

// Reference on the whole text: the stop whose end comes first (longest on ties).
outcome reference(const std::string& text, const std::vector<std::string>& stops, bool include) {
  for (std::size_t end = 1; end <= text.size(); ++end) {
    const std::string* best = nullptr;
    for (const auto& s : stops)
      if (!s.empty() && s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0)
        if (!best || s.size() > best->size()) best = &s;
    if (best) return {text.substr(0, include ? end : end - best->size()), *best};
  }
  return {text, std::nullopt};
}

// Feeds text cut at the positions whose bit is set in `mask`; checks that no released
// text is ever retracted and that nothing is released after a match.
outcome stream(const std::string& text, unsigned mask, const std::vector<std::string>& stops, bool include) {
  stop_strings m(stops, include);
  outcome out;
  std::size_t start = 0;
  for (std::size_t i = 1; i <= text.size(); ++i) {
    if (i < text.size() && !(mask & (1u << (i - 1)))) continue;
    auto s = m.push(std::string_view(text).substr(start, i - start));
    REQUIRE((!out.match || s.text.empty()));
    out.text += s.text;
    if (s.match) out.match = s.match;
    start = i;
  }
  out.text += m.flush();
  return out;
}

}  // namespace

TEST_CASE("stop strings give the same result for every split into tokens") {
  struct tc {
    std::string text;
    std::vector<std::string> stops;
  };
  std::vector<tc> cases{
      {"Hello world. Bye", {"world"}},
      {"abababcab", {"abc"}},
      {"aaaab", {"aab", "b"}},
      {"xx<|end|>yy", {"<|end|>"}},
      {"no match here", {"zz", "hereX"}},
      {"stop at the end", {"end"}},
      {"overlap abcd", {"bcd", "abcd", "c"}},
      {"\xC3\xA9t\xC3\xA9!", {"\xC3\xA9!"}},
  };
  for (const auto& c : cases) {
    for (bool include : {false, true}) {
      auto want = reference(c.text, c.stops, include);
      const unsigned n_masks = 1u << (c.text.size() - 1);
      for (unsigned mask = 0; mask < n_masks; ++mask) {
        INFO(c.text << " mask " << mask << " include " << include);
        REQUIRE(stream(c.text, mask, c.stops, include) == want);
      }
    }
  }
}

TEST_CASE("text is held back only while it can start a stop string") {
  stop_strings m({"STOP"}, false);
  CHECK(m.push("abc").text == "abc");
  CHECK(m.push("xS").text == "x");
  CHECK(m.push("T").text.empty());
  CHECK(m.push("x").text == "STx");
  auto s = m.push("ST");
  CHECK(s.text.empty());
  s = m.push("OP and more");
  CHECK(s.text.empty());
  REQUIRE(s.match);
  CHECK(*s.match == "STOP");
  CHECK(m.matched());
  CHECK(m.push("later").text.empty());
  CHECK(m.flush().empty());
}

TEST_CASE("stop_checker: EOS ends with no stop_reason and no text") {
  sampling_params p;
  p.max_tokens = 10;
  std::vector<token_id> eos{2};
  stop_checker c(p, eos);
  auto o = c.on_token(5, "Hi", 1);
  CHECK(o.text == "Hi");
  CHECK(!o.finish);
  o = c.on_token(2, "</s>", 2);
  REQUIRE(o.finish);
  CHECK(*o.finish == finish_reason::stop);
  CHECK(std::holds_alternative<std::monostate>(o.reason));
  CHECK(o.text.empty());
}

TEST_CASE("stop_checker: stop_token_ids report the id; include_stop_str keeps its text") {
  sampling_params p;
  p.stop_token_ids = {7};
  p.include_stop_str_in_output = true;
  stop_checker c(p, {});
  auto o = c.on_token(7, "<eot>", 1);
  REQUIRE(o.finish);
  CHECK(std::get<token_id>(o.reason) == 7);
  CHECK(o.text == "<eot>");
}

TEST_CASE("stop_checker: ignore_eos and min_tokens") {
  sampling_params p;
  p.ignore_eos = true;
  p.max_tokens = 3;
  std::vector<token_id> eos{2};
  stop_checker c(p, eos);
  CHECK(!c.on_token(2, "a", 1).finish);
  CHECK(!c.on_token(2, "b", 2).finish);
  auto o = c.on_token(2, "c", 3);
  REQUIRE(o.finish);
  CHECK(*o.finish == finish_reason::length);

  sampling_params q;
  q.min_tokens = 2;
  q.stop = {"x"};
  stop_checker d(q, eos);
  auto o1 = d.on_token(2, "x", 1);  // EOS and "x" both before min_tokens
  CHECK(!o1.finish);
  CHECK(o1.text == "x");
  auto o2 = d.on_token(4, "yx", 2);
  REQUIRE(o2.finish);
  CHECK(std::get<std::string>(o2.reason) == "x");
  CHECK(o2.text == "y");
}

TEST_CASE("stop_checker: length releases held-back text") {
  sampling_params p;
  p.max_tokens = 2;
  p.stop = {"abc"};
  stop_checker c(p, {});
  CHECK(c.on_token(1, "xa", 1).text == "x");
  auto o = c.on_token(1, "b", 2);
  REQUIRE(o.finish);
  CHECK(*o.finish == finish_reason::length);
  CHECK(o.text == "ab");
  CHECK(std::holds_alternative<std::monostate>(o.reason));
}
