#include "catch.hpp"

#include <string>

#include "base/utf8.hpp"

using namespace std::string_literals;

TEST_CASE("utf8::valid accepts well-formed and rejects malformed input", "[base][utf8]") {
  CHECK(vks::utf8::valid(""));
  CHECK(vks::utf8::valid("hello"));
  CHECK(vks::utf8::valid("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"));
  CHECK_FALSE(vks::utf8::valid("\xC3"));              // truncated
  CHECK_FALSE(vks::utf8::valid("\xC0\xAF"));          // overlong
  CHECK_FALSE(vks::utf8::valid("\xE0\x80\xAF"));      // overlong 3-byte
  CHECK_FALSE(vks::utf8::valid("\xED\xA0\x80"));      // surrogate
  CHECK_FALSE(vks::utf8::valid("\xF4\x90\x80\x80"));  // > U+10FFFF
  CHECK_FALSE(vks::utf8::valid("\xFF"));
  CHECK_FALSE(vks::utf8::valid("\x80"));
  CHECK(vks::utf8::valid("a\0b"s));
}

TEST_CASE("utf8::complete_prefix holds back an unfinished character", "[base][utf8]") {
  std::string euro = "\xE2\x82\xAC";
  CHECK(vks::utf8::complete_prefix("ab") == 2);
  CHECK(vks::utf8::complete_prefix("ab" + euro) == 5);
  CHECK(vks::utf8::complete_prefix("ab" + euro.substr(0, 1)) == 2);
  CHECK(vks::utf8::complete_prefix("ab" + euro.substr(0, 2)) == 2);
  std::string emoji = "\xF0\x9F\x98\x80";
  for (size_t k = 1; k < 4; ++k) CHECK(vks::utf8::complete_prefix("x" + emoji.substr(0, k)) == 1);
  CHECK(vks::utf8::complete_prefix("x" + emoji) == 5);
}

TEST_CASE("utf8::decode reads one whole, well-formed character", "[base][utf8]") {
  char32_t cp = 0;
  CHECK(vks::utf8::decode("A!", cp) == 1);
  CHECK(cp == U'A');
  CHECK(vks::utf8::decode("\xC3\xA9x", cp) == 2);
  CHECK(cp == U'\u00e9');
  CHECK(vks::utf8::decode("\xE2\x82\xAC", cp) == 3);
  CHECK(cp == U'\u20ac');
  CHECK(vks::utf8::decode("\xF0\x9F\x98\x80", cp) == 4);
  CHECK(cp == U'\U0001F600');
  cp = 7;
  for (const std::string& bad : {""s, "\xE2\x82"s, "\xC0\xAF"s, "\xED\xA0\x80"s, "\xF4\x90\x80\x80"s, "\x80"s, "\xFF"s}) {
    CHECK(vks::utf8::decode(bad, cp) == 0);
    CHECK(cp == 7);  // untouched
  }
}
