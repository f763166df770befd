// Unicode-form normalizer steps: normalizing only the non-ASCII stretches (the fast path)
// must give exactly what utf8proc gives for the whole text, for every form.
#include "catch.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "text/tokenizer/normalizer.hpp"

using vks::text::normalizer;

namespace {

std::string whole(const std::string& in, normalizer::op kind) {
  int opts = UTF8PROC_STABLE;
  if (kind == normalizer::op::nfc) opts |= UTF8PROC_COMPOSE;
  if (kind == normalizer::op::nfd) opts |= UTF8PROC_DECOMPOSE;
  if (kind == normalizer::op::nfkc) opts |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
  if (kind == normalizer::op::nfkd) opts |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
  utf8proc_uint8_t* dst = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(in.data()), static_cast<utf8proc_ssize_t>(in.size()),
                        &dst, static_cast<utf8proc_option_t>(opts));
  REQUIRE(n >= 0);
  std::string out(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
  return out;
}

std::string pieces_form(const std::string& in, normalizer::op kind) {
  normalizer nz;
  normalizer::step st;
  st.kind = kind;
  nz.add(st);
  std::string buf;
  return std::string(nz.apply(in, buf));
}

}  // namespace

TEST_CASE("normalizer: Unicode forms over mixed text equal the whole-text forms", "[text][normalizer]") {
  // Pieces chosen to interact across ASCII boundaries: combining marks after ASCII letters
  // (compose with them), precomposed letters, marks needing reordering, Hangul jamo that
  // compose, compatibility characters that decompose to ASCII, CJK, emoji.
  const std::vector<std::string> pieces = {
      "a", "e", "Z", " ", "\n", ".", "\xcc\x81" /* U+0301 */, "\xcc\x88" /* U+0308 */, "\xcc\xa3" /* U+0323 */,
      "\xc3\xa9" /* é */, "\xc3\x85" /* Å */, "\xe1\x84\x80" /* U+1100 */, "\xe1\x85\xa1" /* U+1161 */,
      "\xef\xac\x81" /* ﬁ */, "\xe2\x91\xa0" /* ① */, "\xef\xbd\x86" /* ｆ */, "\xe4\xb8\xad" /* 中 */,
      "\xf0\x9f\x98\x80" /* 😀 */, "\xe2\x84\xab" /* Å (U+212B) */};
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1);
  std::uniform_int_distribution<int> len(0, 12);
  const normalizer::op forms[] = {normalizer::op::nfc, normalizer::op::nfd, normalizer::op::nfkc, normalizer::op::nfkd};
  for (normalizer::op kind : forms) {
    for (int iter = 0; iter < 3000; ++iter) {
      std::string s;
      for (int k = len(rng); k > 0; --k) s += pieces[pick(rng)];
      INFO("form " << static_cast<int>(kind) << " input '" << s << "'");
      CHECK(pieces_form(s, kind) == whole(s, kind));
    }
  }
  CHECK(pieces_form("plain ascii text", normalizer::op::nfc) == "plain ascii text");
  CHECK(pieces_form("e\xcc\x81t\xc3\xa9", normalizer::op::nfc) == "\xc3\xa9t\xc3\xa9");
}
