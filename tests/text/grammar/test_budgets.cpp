// Hostile grammars (issue #17): the compilers' budgets (expanded size of nested
// repetitions, rule elements, group nesting) and the matcher's caps (live stacks, arena).
// Each input here crashed, or ate memory without bound, before the budgets existed.
#include <string>

#include "common.hpp"
#include "text/grammar/json_schema.hpp"
#include "text/grammar/parsers.hpp"
#include "text/grammar/structural_tag.hpp"

using namespace vks::text::grammar;
using namespace vks::text::grammar::test;

namespace {

// The error message of a compilation that must fail with invalid_argument.
std::string refused(vks::result<grammar> g) {
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().code == vks::errc::invalid_argument);
  return g.error().message;
}

}  // namespace

TEST_CASE("budget: nested repetitions multiply and are refused before they are built", "[grammar][budget]") {
  // 18 bytes that expanded to 10^6 nested nullable rules (the engine thread crashed).
  const std::string msg = refused(parse_regex("((a?){1000}){1000}"));
  CHECK(msg.find("expands to over") != std::string::npos);
  CHECK(refused(parse_gbnf("root ::= ((\"a\"?){1000}){1000}\n")).find("expands to over") != std::string::npos);
  // One level compiles. Its 1000 nullable copies need ~1000 live stacks and a quadratic
  // arena, past the default matcher caps (the matcher fails, it does not grow); with the
  // caps raised such a grammar matches (400 copies: the match costs cubic time, and this
  // test runs under the sanitizers too).
  auto g = must(parse_regex("(a?){1000}"));
  matcher capped(g);
  CHECK_FALSE(capped.accept(std::string(1000, 'a')));
  CHECK(capped.failed());
  auto g400 = must(parse_regex("(a?){400}"));
  matcher roomy(g400, matcher_limits{4096, std::size_t{1} << 22});
  CHECK(roomy.accept(std::string(400, 'a')));
  CHECK(roomy.can_end());
  CHECK_FALSE(roomy.accept("a"));
  auto g200 = must(parse_regex("(a?){200}"));
  CHECK(full(g200, std::string(200, 'a')));
  CHECK_FALSE(full(g200, std::string(201, 'a')));
}

TEST_CASE("budget: many big repetitions stop at the element budget", "[grammar][budget]") {
  // a{0,10000} repeated in a 2 KB regex built ~1 GB of rules.
  std::string re;
  while (re.size() < 2000) re += "a{0,10000}";
  const std::string msg = refused(parse_regex(re));
  CHECK(msg.find("rule elements") != std::string::npos);
  CHECK(msg.find(std::to_string(grammar_budget{}.max_elements)) != std::string::npos);
  // A tighter budget refuses earlier, through the builder API as well.
  builder b(grammar_budget{1000, 1 << 20});
  auto e = b.repeat({element::one('x')}, 0, 500, "x");
  CHECK_FALSE(e.ok());
  CHECK(b.n_elements() <= 1000);
}

TEST_CASE("budget: groups nested 10^5 deep are refused, not recursed into", "[grammar][budget]") {
  const std::size_t depth = 100'000;
  const std::string nested = std::string(depth, '(') + "a" + std::string(depth, ')');
  CHECK(refused(parse_regex(nested)).find("nested too deeply (over") != std::string::npos);
  CHECK(refused(parse_gbnf("root ::= " + nested)).find("nested too deeply (over") != std::string::npos);
  // JSON schemas: nested "items" far past the schema depth limit.
  nlohmann::ordered_json s = {{"type", "string"}};
  for (int i = 0; i < 1000; ++i) s = nlohmann::ordered_json{{"type", "array"}, {"items", std::move(s)}};
  CHECK(refused(compile_json_schema(s)).find("nested too deeply (over") != std::string::npos);
  // Nesting within the limit still compiles.
  CHECK(full(must(parse_regex(std::string(150, '(') + "a" + std::string(150, ')'))), "a"));
}

TEST_CASE("budget: the defaults fit real schemas and patterns", "[grammar][budget]") {
  nlohmann::ordered_json props = nlohmann::ordered_json::object();
  nlohmann::ordered_json req = nlohmann::ordered_json::array();
  for (int i = 0; i < 300; ++i) {
    const std::string k = "field_" + std::to_string(i);
    props[k] = i % 3 == 0   ? nlohmann::ordered_json{{"type", "string"}, {"maxLength", 200}}
               : i % 3 == 1 ? nlohmann::ordered_json{{"type", "integer"}}
                            : nlohmann::ordered_json{{"type", "array"}, {"items", {{"type", "number"}}}, {"maxItems", 20}};
    req.push_back(k);
  }
  CHECK(compile_json_schema({{"type", "object"}, {"properties", props}, {"required", req}}).ok());
  CHECK(compile_json_schema({{"type", "string"}, {"maxLength", 10000}}).ok());
  auto date = must(parse_regex(R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))"));
  CHECK(full(date, "2026-11-25"));
  auto email = must(parse_regex(R"([a-zA-Z0-9._%+-]{1,64}@[a-zA-Z0-9.-]{1,253}\.[a-zA-Z]{2,24})"));
  CHECK(full(email, "someone@example.com"));
  CHECK(must(parse_regex("(a{1000}){1000}"))->elems.size() < 10'000);  // 10^6 unrolled, small built
}

TEST_CASE("matcher cap: an ambiguous grammar fails once its stacks pass the cap", "[grammar][budget][matcher]") {
  // Every "a" doubles the distinct stacks (each remembers a different b/c suffix); before
  // the cap the stack set grew until bad_alloc ended the process.
  auto g = must(parse_gbnf(R"(
    root ::= "a" root "b" | "a" root "c" | "x"
  )"));
  matcher m(g);
  int fed = 0;
  for (; fed < 64; ++fed)
    if (!m.accept("a")) break;
  CHECK(fed < 20);
  REQUIRE(m.failed());
  CHECK(m.error().find("too ambiguous") != std::string::npos);
  CHECK(m.error().find(std::to_string(matcher_limits{}.max_stacks)) != std::string::npos);
  // Failed for good: everything is refused, the state stays within the cap.
  CHECK_FALSE(m.accept("a"));
  CHECK_FALSE(m.accept("x"));
  CHECK(m.current().stacks.size() <= matcher_limits{}.max_stacks);
  // A few levels are fine.
  CHECK(full(g, "aaxcb"));
  CHECK_FALSE(full(g, "aaxcbb"));
}

TEST_CASE("matcher cap: nested nullable rules past the arena fail without recursion", "[grammar][budget][matcher]") {
  // Forward references count one element each at compile time, so this compiles; its
  // start expands through 10^6 nullable positions (a stack overflow when expansion
  // recursed). The arena cap stops it.
  auto g = must(parse_gbnf("root ::= b{1000}\nb ::= c{1000}\nc ::= \"x\"?\n"));
  matcher m(g);
  REQUIRE(m.failed());
  CHECK(m.error().find("matcher nodes") != std::string::npos);
  CHECK_FALSE(m.accept("x"));
  CHECK_FALSE(m.can_end());
  // The same shape at a size within the caps works.
  auto small = must(parse_gbnf("root ::= b{20}\nb ::= c{20}\nc ::= \"x\"?\n"));
  CHECK(full(small, std::string(400, 'x')));
  CHECK_FALSE(full(small, std::string(401, 'x')));
}

TEST_CASE("matcher cap: limits are per matcher", "[grammar][budget][matcher]") {
  auto g = must(parse_regex("[a-z]{0,200}"));
  matcher tight(g, matcher_limits{1024, 64});
  CHECK_FALSE(tight.accept(std::string(100, 'q')));
  CHECK(tight.failed());
  matcher roomy(g);
  CHECK(roomy.accept(std::string(100, 'q')));
  CHECK_FALSE(roomy.failed());
}

TEST_CASE("budget: structural tags bound their trigger automaton", "[grammar][budget][tag]") {
  structural_tag long_trigger;
  long_trigger.triggers = {"<" + std::string(3000, 'x')};
  CHECK(refused(compile_structural_tag(long_trigger)).find("characters") != std::string::npos);
  // 1000 one-character triggers and one of 1000: ~2000 states x ~1000 characters.
  structural_tag wide;
  for (char32_t c = 0x4e00; c < 0x4e00 + 1000; ++c) {
    const char t[] = {static_cast<char>(0xe0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3f)),
                      static_cast<char>(0x80 | (c & 0x3f)), 0};
    wide.triggers.push_back(t);
  }
  wide.triggers.push_back("<" + std::string(1000, 'y'));
  CHECK(refused(compile_structural_tag(wide)).find("transitions") != std::string::npos);
  structural_tag many;
  many.triggers = {"<f>"};
  for (int i = 0; i < 2000; ++i) many.structures.push_back({"<f>", {{"type", "integer"}}, "</f>"});
  CHECK(refused(compile_structural_tag(many)).find("structures") != std::string::npos);
  // A few tools' worth compiles.
  structural_tag tools;
  tools.triggers = {"<function="};
  for (int i = 0; i < 50; ++i)
    tools.structures.push_back({"<function=f" + std::to_string(i) + ">", {{"type", "object"}}, "</function>"});
  CHECK(compile_structural_tag(tools).ok());
}
