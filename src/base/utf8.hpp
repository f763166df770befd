// UTF-8 helpers shared by text, api and http (WebSocket text frames).
// All functions but append take raw bytes and never allocate.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vks::utf8 {

// True if s is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool valid(std::string_view s) noexcept;

// Length of the longest prefix of s that ends on a character boundary, given that s may
// end in the middle of a multi-byte sequence (streaming). Invalid bytes count as complete
// one-byte units so that a stream never stalls on garbage.
std::size_t complete_prefix(std::string_view s) noexcept;

// Number of bytes in the sequence introduced by lead byte b (1..4), or 0 if b is not a
// valid lead byte.
int sequence_length(unsigned char b) noexcept;

// Decodes the character at the start of s into cp and returns its length, or 0 (cp
// untouched) when s does not start with a complete, well-formed character.
std::size_t decode(std::string_view s, char32_t& cp) noexcept;

// Appends cp (<= U+10FFFF; the caller rules out surrogates where they matter) as UTF-8.
void append(std::string& out, char32_t cp);

}  // namespace vks::utf8
