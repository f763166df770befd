// Structural tags: free text with structures started by triggers. Free text that holds no
// trigger is accepted (checked against a plain substring search on random texts), a
// trigger must be followed by one of its structures with a conforming JSON document,
// random sentences split into free text and valid structures, token masks agree with
// feeding each token, and malformed tags are refused with the offending field named.
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "text/grammar/structural_tag.hpp"
#include "text/grammar/token_mask.hpp"

using namespace vks::text::grammar;
using namespace vks::text::grammar::test;
using ojson = nlohmann::ordered_json;

namespace {

const char* k_weather = R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})";
const char* k_time = R"({"type":"object","properties":{"tz":{"enum":["utc","cet"]}},"required":["tz"]})";

structural_tag functions() {
  return {{{"<function=get_weather>", ojson::parse(k_weather), "</function>"},
           {"<function=get_time>", ojson::parse(k_time), "</function>"}},
          {"<function="}};
}

// m would accept text (advance_byte: no copy of the matcher's arena).
bool probe(matcher& m, std::string_view text) {
  matcher::state a = m.current(), b;
  for (char c : text) {
    if (!m.advance_byte(a, static_cast<unsigned char>(c), b)) return false;
    std::swap(a, b);
  }
  return true;
}

bool contains_any(std::string_view text, const std::vector<std::string>& words) {
  for (const auto& w : words)
    if (text.find(w) != std::string_view::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("structural tag: free text and function structures", "[grammar][tag]") {
  auto g = must(compile_structural_tag(functions()));
  CHECK(full(g, ""));
  CHECK(full(g, "Just some text, with <tags> and = signs < function= ."));
  CHECK(full(g, R"(<function=get_weather>{"city": "Paris"}</function>)"));
  CHECK(full(g, "Let me check.\n<function=get_weather>\n{\"city\":\"Oslo\"}</function> and "
                "<function=get_time>{\"tz\": \"cet\"}</function>done"));
  CHECK(full(g, "ends with half a trigger <functio"));  // the trigger never completed
  CHECK_FALSE(full(g, "<function=get_weather>{\"city\": \"Paris\"}"));      // no end
  CHECK(prefix(g, "<function=get_weather>{\"city\": \"Paris\"}"));
  CHECK_FALSE(full(g, "text <function="));                                  // inside a structure
  CHECK_FALSE(prefix(g, "<function=get_news>"));                            // no such structure
  CHECK_FALSE(prefix(g, "<function=get_weather>{\"town\""));                // schema
  CHECK_FALSE(prefix(g, R"(<function=get_time>{"tz": "pst")"));
  CHECK_FALSE(full(g, R"(<function=get_time>{"tz": "utc"}</function )"));   // end is exact
  CHECK_FALSE(prefix(g, R"(<function=get_weather>{"city": "Paris"}</function> <function=x)"));
}

TEST_CASE("structural tag: free text excludes exactly the texts holding a trigger", "[grammar][tag]") {
  // Overlapping triggers over a small alphabet exercise the automaton's failure links
  // ("aab" inside "aaab", "ba" as a suffix of "aba"). After a trigger nothing here can
  // begin a JSON document, so a text is a sentence iff it holds no trigger.
  const std::vector<std::vector<std::string>> sets = {{"aab"}, {"ab", "ba"}, {"abab", "bb"}, {"aba", "xba"}};
  std::mt19937 rng(7);
  for (const auto& triggers : sets) {
    structural_tag tag;
    tag.triggers = triggers;
    for (const auto& t : triggers) tag.structures.push_back({t + "!", ojson::parse("true"), "."});
    auto g = must(compile_structural_tag(tag));
    for (int n = 0; n < 400; ++n) {
      std::string s(std::uniform_int_distribution<std::size_t>(0, 9)(rng), ' ');
      for (char& c : s) c = "abx"[std::uniform_int_distribution<int>(0, 2)(rng)];
      INFO("triggers " << triggers[0] << ", text " << s);
      CHECK(full(g, s) == !contains_any(s, triggers));
    }
    for (const auto& t : triggers) {
      CHECK(full(g, "x" + t + "! true.xx"));
      CHECK_FALSE(full(g, "x" + t + "?"));
    }
  }
  // A trigger inside a longer one completes first ("ab" in "xab..."), and both
  // triggers' structures are open when they complete together.
  structural_tag inner{{{"ab{", ojson::parse("true"), "}"}, {"xab[", ojson::parse("true"), "]"}}, {"ab", "xab"}};
  auto g = must(compile_structural_tag(inner));
  CHECK(full(g, "xab[true]"));
  CHECK(full(g, "xab{true}"));
  CHECK(full(g, "ab{true}"));
  CHECK_FALSE(full(g, "ab[true]"));
}

TEST_CASE("structural tag: multi-byte triggers and structures without a trigger of their own", "[grammar][tag]") {
  structural_tag tag{{{"<｜tool▁call｜>f", ojson::parse(R"({"type":"integer"})"), "<｜end｜>"}}, {"<｜tool▁call｜>"}};
  auto g = must(compile_structural_tag(tag));
  CHECK(full(g, "héllo ▁ ｜ <｜tool▁call｜>f 42<｜end｜> après"));
  CHECK_FALSE(prefix(g, "<｜tool▁call｜>g"));
  // Split UTF-8: the matcher waits on the partial character of the trigger.
  matcher m(g);
  const std::string t = "<｜tool▁call｜>f7<｜end｜>";
  for (char c : t) REQUIRE(m.accept(std::string_view(&c, 1)));
  CHECK(m.can_end());

  // No structures: the triggers are simply forbidden.
  auto none = must(compile_structural_tag({{}, {"<stop>"}}));
  CHECK(full(none, "<sto"));
  CHECK_FALSE(prefix(none, "a <stop>"));
}

TEST_CASE("structural tag: random sentences are free text and valid structures", "[grammar][tag]") {
  auto g = must(compile_structural_tag(functions()));
  // A walk over pieces (printable characters, and the triggers and names whole so that
  // structures are frequent): at each step one piece the matcher accepts; late in the
  // walk pieces that close JSON and structures win, to end.
  std::vector<std::string> pieces = {"<function=", "get_weather>", "get_time>", "</function>", "\n"};
  for (char c = 0x20; c < 0x7f; ++c) pieces.emplace_back(1, c);
  std::mt19937 rng(3);
  int n_structures = 0;
  for (int t = 0; t < 40; ++t) {
    matcher m(g);
    std::string s;
    for (int step = 0; step < 1000; ++step) {
      if (m.can_end() && (s.size() > 300 || std::uniform_real_distribution<double>(0, 1)(rng) < 0.01)) break;
      std::vector<const std::string*> ok;
      for (const auto& p : pieces)
        if (probe(m, p)) ok.push_back(&p);
      REQUIRE(!ok.empty());
      const std::string* p = ok[std::uniform_int_distribution<std::size_t>(0, ok.size() - 1)(rng)];
      if (s.size() > 200)
        for (const char* closer : {"</function>", "0", "}", "\""})  // the last one present wins
          for (const auto* q : ok)
            if (*q == closer) p = q;
      REQUIRE(m.accept(*p));
      s += *p;
    }
    INFO("sentence: " << s);
    REQUIRE(m.can_end());
    std::size_t at = 0;
    while ((at = s.find("<function=", at)) != std::string::npos) {
      const bool weather = s.compare(at, 22, "<function=get_weather>") == 0;
      REQUIRE((weather || s.compare(at, 19, "<function=get_time>") == 0));
      const std::size_t body = at + (weather ? 22 : 19);
      // The document ends at the first "</function>" behind which it parses (a JSON
      // string may hold the end text too).
      std::size_t end = s.find("</function>", body);
      ojson doc;
      while (end != std::string::npos && (doc = ojson::parse(s.substr(body, end - body), nullptr, false)).is_discarded())
        end = s.find("</function>", end + 1);
      REQUIRE(end != std::string::npos);
      if (weather) CHECK(doc["city"].is_string());
      else CHECK((doc["tz"] == "utc" || doc["tz"] == "cet"));
      ++n_structures;
      at = end + 11;
    }
  }
  CHECK(n_structures > 10);
}

TEST_CASE("structural tag: token masks agree with feeding each token", "[grammar][tag][mask]") {
  const std::vector<std::string> vocab = {"<",  "<function=", "function", "=",     "get_weather>", "get_time>", "{",
                                          "}",  "\"city\"",   ":",        " \"",   "Paris",        "\"",        "</function>",
                                          "hi", " there",     "<f",       "=get_", "weather>{",    "x<function=get_time>"};
  vocab_index idx(vocab);
  auto g = must(compile_structural_tag(functions()));
  matcher m(g);
  auto allowed_texts = [&] {
    std::vector<std::uint8_t> got;
    idx.allowed(m, got);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < vocab.size(); ++i) {
      matcher copy = m;
      CHECK((got[i] != 0) == copy.accept(vocab[i]));
      if (got[i]) out.push_back(vocab[i]);
    }
    return out;
  };
  CHECK(allowed_texts().size() == vocab.size());  // free text: every token, whole calls too
  REQUIRE(m.accept("hi<function="));
  CHECK(allowed_texts() == std::vector<std::string>{"get_weather>", "get_time>"});
  REQUIRE(m.accept("get_"));
  CHECK(allowed_texts() == std::vector<std::string>{"weather>{"});
  REQUIRE(m.accept("weather>{"));
  CHECK(allowed_texts() == std::vector<std::string>{"\"city\"", " \"", "\""});
  REQUIRE(m.accept("\"city\": \"Paris\"}"));
  CHECK(allowed_texts() == std::vector<std::string>{"<", "</function>"});
  CHECK_FALSE(m.can_end());
  REQUIRE(m.accept("</function>"));
  CHECK(m.can_end());
}

TEST_CASE("structural tag: malformed tags are refused naming the field", "[grammar][tag]") {
  struct bad_case {
    structural_tag tag;
    std::string says;
  };
  const bad_case cases[] = {
      {{{}, {""}}, "triggers[0] must not be empty"},
      {{{}, {"<f", "<fun"}}, "triggers[0] `<f` is a prefix of triggers[1]"},
      {{{}, {"<a", "<a"}}, "is a prefix of"},
      {{{{"<g>", ojson::parse("true"), "</g>"}}, {"<f"}}, "structures[0].begin `<g>` does not start"},
      {{{{"<f>", ojson::parse(R"({"type":"strnig"})"), "</f>"}}, {"<f"}}, "structures[0].schema: JSON schema"},
      {{{}, {"\xff"}}, "triggers[0] is not valid UTF-8"},
  };
  for (const auto& c : cases) {
    auto g = compile_structural_tag(c.tag);
    REQUIRE(!g.ok());
    INFO(g.error().message);
    CHECK(g.error().message.find(c.says) != std::string::npos);
    CHECK(g.error().code == vks::errc::invalid_argument);
  }
}

TEST_CASE("structural tag: text_until and structures with their own body grammar", "[grammar][tag]") {
  // text_until(stop): any text without `stop`, then `stop` (self-overlapping stops included),
  // checked against a substring search on every text of up to 4 characters over a small alphabet.
  for (std::string stop : {"aab", "abab", "</p>", "<|\"|>", "x"}) {
    INFO(stop);
    builder b;
    const std::uint32_t root = b.rule_id("root");
    b.add_alt(root, {b.text_until(stop, "until")});
    auto g = must(std::move(b).finish(root));
    const std::string alphabet = "ab</p>x|\"";
    std::vector<std::string> texts{""};
    for (int len = 1; len <= 4; ++len) {
      const std::size_t n = texts.size();
      for (std::size_t i = 0; i < n; ++i)
        if (texts[i].size() == static_cast<std::size_t>(len - 1))
          for (char c : alphabet) texts.push_back(texts[i] + c);
    }
    for (const auto& t : texts) {
      INFO(t);
      // Accepted exactly when the first occurrence of stop ends the text.
      for (const std::string& x : {t, t + stop}) {
        const bool first_at_end = x.size() >= stop.size() && x.find(stop) == x.size() - stop.size();
        CHECK(full(g, x) == first_at_end);
      }
    }
  }
  // A structure's body: begin, the body's grammar, end.
  structural_tag tag{{{"<call name=\"f\">", ojson(), "</call>"}}, {"<call"}};
  tag.structures[0].body = [](builder& b, const json_grammar_options&) -> vks::result<element> {
    sequence s;
    builder::append_literal(s, "<p>");
    s.push_back(b.text_until("</p>", "p"));
    return b.group({s}, "body");
  };
  auto g = must(compile_structural_tag(tag));
  CHECK(full(g, "Text <call name=\"f\"><p>any < text</p></call> more"));
  CHECK_FALSE(full(g, "<call name=\"f\">{}</call>"));
  CHECK_FALSE(full(g, "<call name=\"f\"><p>x</p></p></call>"));
}
