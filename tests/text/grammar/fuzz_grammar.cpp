// Fuzz target for the structured-output compilers and the matcher (text/grammar). The
// first input byte picks the notation (GBNF, regex, JSON schema; with its top bit set,
// structural-tag triggers) and how the text after the first NUL is fed; the bytes
// before it are the constraint. Checks: no crash/UB/leak;
// compilers either succeed or return invalid_argument; the matcher refuses a piece
// without changing its state, and feeding bytes one by one ends where feeding them at
// once does; a token mask over the fed bytes' substrings agrees with feeding each alone.
// Budgets: a compiled grammar is within grammar_budget; a matcher never holds more live
// stacks than its cap, a failed one refuses everything, and a matcher with tight caps
// either fails or agrees with one with the default caps.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "text/grammar/json_schema.hpp"
#include "text/grammar/matcher.hpp"
#include "text/grammar/parsers.hpp"
#include "text/grammar/structural_tag.hpp"
#include "text/grammar/token_mask.hpp"

using namespace vks::text::grammar;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}

// Structural tag: the spec is its triggers separated by '|'; each trigger T starts one
// structure "T>" <any JSON> "<".
structural_tag tag_of(std::string_view spec) {
  structural_tag tag;
  for (std::size_t at = 0; at <= spec.size();) {
    const std::size_t bar = std::min(spec.find('|', at), spec.size());
    tag.triggers.emplace_back(spec.substr(at, bar - at));
    tag.structures.push_back({tag.triggers.back() + ">", true, "<"});
    at = bar + 1;
  }
  return tag;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 512) return 0;
  const std::uint8_t mode = data[0];
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto nul = in.find('\0');
  std::string_view spec = in.substr(0, nul);
  std::string_view text = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1, 64);

  vks::result<grammar> g = vks::fail(vks::errc::internal, "unset");
  switch ((mode & 0x80) != 0 ? 3 : mode % 3) {
    case 0: g = parse_gbnf(spec); break;
    case 1: g = parse_regex(spec); break;
    case 3: g = compile_structural_tag(tag_of(spec)); break;
    default: {
      auto j = nlohmann::ordered_json::parse(spec, nullptr, false);
      if (j.is_discarded()) return 0;
      json_grammar_options opt;
      opt.any_whitespace = (mode & 4) == 0;
      g = compile_json_schema(j, opt);
    }
  }
  if (!g) {
    check(g.error().code == vks::errc::invalid_argument);
    return 0;
  }
  check(g->elems.size() <= grammar_budget{}.max_elements);
  auto shared = std::make_shared<const grammar>(std::move(*g));
  matcher whole(shared), bytewise(shared);
  const bool all = whole.accept(text);
  check(whole.current().stacks.size() <= matcher_limits{}.max_stacks);
  if (whole.failed()) check(!whole.accept("a") && !whole.accept("0") && !whole.can_end());
  {
    matcher tight(shared, matcher_limits{8, 128});
    const bool t = tight.accept(text);
    check(tight.current().stacks.size() <= 8);
    if (tight.failed()) {
      check(!tight.accept("a") && !tight.accept("0") && !tight.can_end());
    } else if (!whole.failed()) {
      check(t == all);
    }
  }
  std::size_t fed = 0;
  for (char c : text) {
    auto before = bytewise.current();
    if (!bytewise.accept(std::string_view(&c, 1))) {
      check(bytewise.current() == before);
      break;
    }
    ++fed;
  }
  check(all == (fed == text.size()));
  if (all) check(whole.current() == bytewise.current());

  // Tokens: every substring of the text up to 4 bytes (shared prefixes on purpose).
  std::vector<std::string> vocab;
  for (std::size_t i = 0; i < text.size() && vocab.size() < 128; ++i)
    for (std::size_t n = 1; n <= 4 && i + n <= text.size(); ++n) vocab.emplace_back(text.substr(i, n));
  vocab_index idx(vocab);
  matcher m(shared);
  std::vector<std::uint8_t> allowed;
  idx.allowed(m, allowed, (mode & 8) != 0);
  if (m.failed()) return 0;  // its arena grew over the walk: single probes may stay under
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    std::string_view t = vocab[i];
    if ((mode & 8) != 0 && !t.empty() && t[0] == ' ') t.remove_prefix(1);
    matcher probe(shared);
    check(static_cast<bool>(allowed[i]) == probe.accept(t));
  }
  return 0;
}
