// Helpers for the grammar tests: whole-text and prefix checks through a fresh matcher,
// and a random walk that writes a sentence of a grammar.
#pragma once

#include <memory>
#include <optional>
#include <random>
#include <string>

#include "catch.hpp"
#include "text/grammar/grammar.hpp"
#include "text/grammar/matcher.hpp"

namespace vks::text::grammar::test {

inline std::shared_ptr<const grammar> must(result<grammar> g) {
  if (!g) FAIL("grammar failed: " << g.error().message);
  return std::make_shared<const grammar>(std::move(*g));
}

// The whole text is a sentence of g.
inline bool full(const std::shared_ptr<const grammar>& g, std::string_view text) {
  matcher m(g);
  return m.accept(text) && m.can_end();
}

// The text is a prefix of some sentence of g.
inline bool prefix(const std::shared_ptr<const grammar>& g, std::string_view text) {
  matcher m(g);
  return m.accept(text);
}

// A random sentence of g over `alphabet` (ASCII): at each step one of the characters the
// matcher accepts, ending with probability p_end once the text is complete. Returns
// nullopt if it reaches max_len without completing.
inline std::optional<std::string> random_sentence(const std::shared_ptr<const grammar>& g, std::mt19937& rng,
                                                  const std::string& alphabet, double p_end = 0.3,
                                                  std::size_t max_len = 400) {
  matcher m(g);
  std::string out;
  while (out.size() < max_len) {
    if (m.can_end() && (!m.can_continue() || std::uniform_real_distribution<double>(0, 1)(rng) < p_end)) return out;
    std::string options;
    matcher::state next;
    for (char c : alphabet)
      if (m.advance_byte(m.current(), static_cast<unsigned char>(c), next)) options += c;
    if (options.empty()) return m.can_end() ? std::optional<std::string>(out) : std::nullopt;
    // Later in the walk, prefer characters that close things to keep sentences short.
    char c = options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng)];
    if (out.size() > max_len / 2)
      for (char closer : std::string("}]\"0")) if (options.find(closer) != std::string::npos) c = closer;
    REQUIRE(m.accept(std::string_view(&c, 1)));
    out += c;
  }
  return std::nullopt;
}

}  // namespace vks::text::grammar::test
