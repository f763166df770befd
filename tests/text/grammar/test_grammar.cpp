// GBNF and regex compilation and the matcher: sentences, prefixes, refusals, UTF-8 split
// across pieces, errors; regexes agree with std::regex on random strings.
#include <regex>

#include "common.hpp"
#include "text/grammar/parsers.hpp"

using namespace vks::text::grammar;
using namespace vks::text::grammar::test;

TEST_CASE("GBNF: literals, classes, groups, repetition", "[grammar][gbnf]") {
  auto g = must(parse_gbnf(R"(
    # a greeting, then digits
    root  ::= greet " " num ("," num)*
    greet ::= "hi" | "hello"
    num   ::= [1-9] [0-9]{0,2}
  )"));
  CHECK(full(g, "hi 1"));
  CHECK(full(g, "hello 12,305,9"));
  CHECK_FALSE(full(g, "hello 1234"));  // at most three digits
  CHECK_FALSE(full(g, "hi 0"));
  CHECK_FALSE(full(g, "hey 1"));
  CHECK(prefix(g, "hel"));
  CHECK_FALSE(prefix(g, "hex"));
  CHECK_FALSE(full(g, "hello"));       // a prefix is not a sentence
  CHECK(full(g, "hi 9,99"));
}

TEST_CASE("GBNF: escapes, negated classes, any, optional and plus", "[grammar][gbnf]") {
  auto g = must(parse_gbnf("root ::= \"\\\"\" [^\"\\n]+ \"\\\"\" \"\\x21\"? \"\\u00e9\" .\n"));
  CHECK(full(g, "\"abc\"\xc3\xa9x"));
  CHECK(full(g, "\"a b\"!\xc3\xa9\xe2\x82\xac"));
  CHECK_FALSE(full(g, "\"\"\xc3\xa9x"));  // + needs one
  CHECK_FALSE(full(g, "\"a\nb\"\xc3\xa9x"));
}

TEST_CASE("GBNF: rules may come in any order and recurse on the right", "[grammar][gbnf]") {
  auto g = must(parse_gbnf("list ::= \"(\" items? \")\"\nroot ::= list\nitems ::= item (\" \" item)*\nitem ::= [a-z]+ | list\n"));
  CHECK(full(g, "()"));
  CHECK(full(g, "(a (b c) ((d)))"));
  CHECK_FALSE(full(g, "(a (b c)"));
  CHECK(prefix(g, "(a (b c)"));
}

TEST_CASE("GBNF: errors name the problem", "[grammar][gbnf]") {
  auto err = [](std::string_view text) {
    auto g = parse_gbnf(text);
    REQUIRE_FALSE(g.ok());
    CHECK(g.error().code == vks::errc::invalid_argument);
    return g.error().message;
  };
  CHECK_THAT(err("root ::= a\na ::= a \"x\" | \"y\"\n"), Catch::Contains("left recursive"));
  CHECK_THAT(err("root ::= b? root \"x\"\nb ::= \"b\"\n"), Catch::Contains("left recursive"));
  CHECK_THAT(err("root ::= undefined\n"), Catch::Contains("undefined"));
  CHECK_THAT(err("start ::= \"x\"\n"), Catch::Contains("root"));
  CHECK_THAT(err("root ::= \"unterminated\n"), Catch::Contains("unterminated"));
  CHECK_THAT(err("root ::= [z-a]\n"), Catch::Contains("out of order"));
  CHECK_THAT(err("root ::= \"x\"\nroot ::= \"y\"\n"), Catch::Contains("twice"));
  CHECK_THAT(err("root ::= \"x\"{3,1}\n"), Catch::Contains("n < m"));
  CHECK_THAT(err("root ::= \"x\"{0,100000}\n"), Catch::Contains("over"));
  CHECK_THAT(err("root ::= " + std::string(500, '(') + "\"x\"" + std::string(500, ')')), Catch::Contains("deeply"));
  CHECK_THAT(err(""), Catch::Contains("empty"));
}

TEST_CASE("matcher: UTF-8 characters split across pieces", "[grammar][matcher]") {
  auto g = must(parse_gbnf("root ::= [α-ω]+ \"!\"\n"));
  const std::string beta = "\xce\xb2";  // β
  matcher m(g);
  REQUIRE(m.accept(beta.substr(0, 1)));  // lead byte: β is possible
  CHECK_FALSE(m.can_end());
  REQUIRE(m.accept(beta.substr(1)));
  REQUIRE(m.accept("!"));
  CHECK(m.can_end());
  CHECK_FALSE(m.can_continue());

  matcher n(g);
  CHECK_FALSE(n.accept("\xd0"));      // Cyrillic lead byte: no Greek letter starts so
  CHECK_FALSE(n.accept("\xce\x41"));  // broken continuation byte
  CHECK_FALSE(n.accept("\xff"));      // never a UTF-8 byte
  CHECK_FALSE(n.accept("\xe0"));      // a 3-byte character is at least U+0800: not Greek
  CHECK_FALSE(n.accept("\xf0"));
  CHECK(n.accept("\xce"));            // state was left unchanged by the refusals
  auto not_greek = must(parse_gbnf("root ::= [^\\u0380-\\u03ff]\n"));
  matcher ng(not_greek);
  CHECK_FALSE(ng.accept("\xce"));    // every character starting 0xCE is Greek: excluded
  CHECK(ng.accept("\xd0"));          // Cyrillic is not
  auto ascii = must(parse_gbnf("root ::= \"{\"\n"));
  matcher a(ascii);
  CHECK_FALSE(a.accept("\xe0"));      // no overlong form of '{'
  CHECK_FALSE(a.accept("\xc1"));
}

TEST_CASE("matcher: a refused piece leaves the state unchanged", "[grammar][matcher]") {
  auto g = must(parse_gbnf("root ::= \"ab\" \"c\"*\n"));
  matcher m(g);
  REQUIRE(m.accept("a"));
  auto before = m.current();
  CHECK_FALSE(m.accept("bx"));
  CHECK(m.current() == before);
  CHECK(m.accept("bcc"));
  CHECK(m.can_end());
  CHECK(m.can_continue());
}

TEST_CASE("regex: agrees with std::regex on random strings", "[grammar][regex]") {
  struct rx_case {
    const char* pattern;
    const char* alphabet;
  };
  const rx_case cases[] = {
      {"[a-c]+@[a-c]+\\.com", "abc@.com"},
      {"(ab|cd)*e?", "abcde"},
      {"\\d{3}-\\d{2,4}", "0129-"},
      {"a{2,4}b{0,2}", "ab"},
      {"[^0-9]x", "0a1x"},
      {"(?:x|yz)+(q)?", "xyzq"},
      {"\\w+\\s\\W", "a_ 9!-"},
      {"^(0|[1-9][0-9]*)(\\.[0-9]+)?$", "0129."},
      {"[\\d.-]{1,3}z", "1.-z"},
      {"a.c", "abc\n"},
  };
  std::mt19937 rng(7);
  for (const auto& c : cases) {
    INFO(c.pattern);
    auto g = must(parse_regex(c.pattern));
    std::regex re(c.pattern, std::regex::ECMAScript);
    const std::string alpha = c.alphabet;
    int n_matches = 0;
    for (int t = 0; t < 3000; ++t) {
      std::string s;
      const auto len = std::uniform_int_distribution<int>(0, 9)(rng);
      for (int k = 0; k < len; ++k) s += alpha[std::uniform_int_distribution<std::size_t>(0, alpha.size() - 1)(rng)];
      const bool want = std::regex_match(s, re);
      n_matches += want;
      INFO("text: " << s);
      REQUIRE(full(g, s) == want);
    }
    // Sentences the matcher writes are matches too.
    for (int t = 0; t < 50; ++t) {
      auto s = random_sentence(g, rng, alpha);
      if (s) {
        INFO("sentence: " << *s);
        CHECK(std::regex_match(*s, re));
      }
    }
    (void)n_matches;
  }
}

TEST_CASE("regex: named groups and lazy quantifiers", "[grammar][regex]") {
  auto g = must(parse_regex("(?P<a>x+?)(?<b>y{1,2}+)z*?"));
  CHECK(full(g, "xxy"));
  CHECK(full(g, "xyyzz"));
  CHECK_FALSE(full(g, "yz"));
}

TEST_CASE("regex: unsupported constructs are refused", "[grammar][regex]") {
  for (const char* p : {"(a)\\1", "a(?=b)", "\\bword", "a**", "(ab", "ab)", "[ab", "x^y", "a$b", "\\q"}) {
    INFO(p);
    auto g = parse_regex(p);
    REQUIRE_FALSE(g.ok());
    CHECK(g.error().code == vks::errc::invalid_argument);
  }
}
