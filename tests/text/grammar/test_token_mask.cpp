// Token masks: vocab_index::allowed agrees with feeding every token on its own, on a
// hand-made vocabulary (shared prefixes, split UTF-8) and on Qwen's real 151k vocabulary.
#include <chrono>
#include <cstdio>

#include "common.hpp"
#include "../tokenizer/common.hpp"
#include "text/grammar/json_schema.hpp"
#include "text/grammar/parsers.hpp"
#include "text/grammar/token_mask.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace vks::text::grammar;
using namespace vks::text::grammar::test;

namespace {

// Token i is allowed when its bytes (after an optional leading space) are accepted.
std::vector<std::uint8_t> brute_force(matcher& m, const std::vector<std::string>& texts, bool strip) {
  std::vector<std::uint8_t> out(texts.size(), 0);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    std::string_view t = texts[i];
    if (t.empty()) continue;
    if (strip && t[0] == ' ') t.remove_prefix(1);
    matcher::state a = m.current(), b;
    bool ok = true;
    for (char c : t) {
      if (!m.advance_byte(a, static_cast<unsigned char>(c), b)) {
        ok = false;
        break;
      }
      std::swap(a, b);
    }
    out[i] = ok;
  }
  return out;
}

}  // namespace

TEST_CASE("token mask: hand-made vocabulary", "[grammar][mask]") {
  const std::vector<std::string> vocab = {"{",  "}",    "\"", "a",  "ab",  "abc", "\"a", "{\"", " ",   "x",
                                          "\xce", "\xb2", "β",  "βa", "\"}", ":",   "1",   "12",  "",   "  {",
                                          ",",  "\"b\"", "b",  "c",  "true", "tr",  "\n",  "a\"", "ββ", "\xce\xb2\"", "ue"};
  vocab_index idx(vocab);
  auto g = must(parse_gbnf(R"(root ::= " "? "{" pair ("," pair)* "}"
pair ::= "\"" [aβb]+ "\"" ":" ("1" [0-9]* | "true")
)"));
  matcher m(g);
  std::mt19937 rng(5);
  for (int step = 0; step < 40 && !m.can_end(); ++step) {
    std::vector<std::uint8_t> got;
    const std::size_t n = idx.allowed(m, got, step == 0);
    REQUIRE(got == brute_force(m, vocab, step == 0));
    REQUIRE(n > 0);
    std::vector<std::size_t> ok;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (got[i]) ok.push_back(i);
    std::string_view t = vocab[ok[std::uniform_int_distribution<std::size_t>(0, ok.size() - 1)(rng)]];
    if (step == 0 && t[0] == ' ') t.remove_prefix(1);
    REQUIRE(m.accept(t));
  }
  std::vector<std::uint8_t> got;
  idx.allowed(m, got);
  CHECK(got[18] == 0);  // empty text: never
}

TEST_CASE("token mask: Qwen vocabulary under a JSON schema", "[grammar][mask]") {
  const auto& tok = vks::text::test::get("models/tokenizers/qwen2.5-qwen3-bpe");
  vocab_index idx(tok);
  std::vector<std::string> texts(static_cast<std::size_t>(tok.n_vocab()));
  for (std::int32_t id = 0; id < tok.n_vocab(); ++id)
    if (!tok.is_special(id)) texts[static_cast<std::size_t>(id)] = tok.token_text(id);
  auto g = must(compile_json_schema(nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}},"required":["city","n"]})")));
  matcher m(g);
  // Walk a conforming document token by token through states of every kind (structure,
  // key, free string, number) and compare at each.
  const auto ids = tok.encode("{\"city\": \"Paris \u00e9t\u00e9\", \"n\": 12}", false, false);
  double worst_ms = 0;
  for (std::int32_t id : ids) {
    std::vector<std::uint8_t> got;
    auto t0 = std::chrono::steady_clock::now();
    const std::size_t n = idx.allowed(m, got);
    worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    INFO("before token " << tok.token_text(id) << ": " << n << " allowed");
    REQUIRE(got == brute_force(m, texts, false));
    CHECK(got[static_cast<std::size_t>(id)] == 1);
    REQUIRE(m.accept(tok.token_text(id)));
  }
  CHECK(m.can_end());
  std::fprintf(stderr, "qwen mask: worst %.1f ms per step over %zu steps\n", worst_ms, ids.size());
}

TEST_CASE("token mask: the cache answers repeated states with the same mask", "[grammar][mask]") {
  const std::vector<std::string> vocab = {"\"", "a", "ab", "b\"", "\"a", "x", "}", "{", ":"};
  vocab_index idx(vocab);
  auto g = must(parse_gbnf("root ::= \"{\" \"\\\"\" [ab]* \"\\\"\" \"}\"\n"));
  matcher m(g);
  mask_cache cache(2);
  auto same = [&](bool strip) {
    std::vector<std::uint8_t> direct;
    const std::size_t n = idx.allowed(m, direct, strip);
    const auto& c = cache.get(idx, m, strip);
    CHECK(c.n_allowed == n);
    for (std::size_t i = 0; i < vocab.size(); ++i) CHECK(c.allows(static_cast<std::int32_t>(i)) == (direct[i] != 0));
  };
  same(false);
  REQUIRE(m.accept("{\""));
  same(false);
  REQUIRE(m.accept("a"));
  same(false);
  const auto misses = cache.misses();
  for (int i = 0; i < 5; ++i) {  // inside the string every character leaves the same state
    REQUIRE(m.accept(i % 2 ? "ab" : "b"));
    same(false);
  }
  CHECK(cache.misses() == misses);
  CHECK(cache.hits() >= 5);
  same(true);  // the strip flag is part of the key
  CHECK(cache.misses() == misses + 1);
  CHECK_FALSE(cache.get(idx, m, false).allows(100));  // outside the vocabulary
}
