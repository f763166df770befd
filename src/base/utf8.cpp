// UTF-8 validation per RFC 3629 (Table 3-7 of the Unicode standard).
#include "base/utf8.hpp"

namespace vks::utf8 {

int sequence_length(unsigned char b) noexcept {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Length of the valid sequence at s[i], or 0 if invalid/truncated.
static std::size_t valid_at(std::string_view s, std::size_t i) noexcept {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  int n = sequence_length(c);
  if (n == 0 || i + n > s.size()) return 0;
  if (n == 1) return 1;
  unsigned char c1 = b(i + 1);
  unsigned char lo = 0x80, hi = 0xBF;
  if (c == 0xE0) lo = 0xA0;
  else if (c == 0xED) hi = 0x9F;
  else if (c == 0xF0) lo = 0x90;
  else if (c == 0xF4) hi = 0x8F;
  if (c1 < lo || c1 > hi) return 0;
  for (int k = 2; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  return static_cast<std::size_t>(n);
}

std::size_t decode(std::string_view s, char32_t& cp) noexcept {
  if (s.empty()) return 0;
  const std::size_t n = valid_at(s, 0);
  if (n == 0) return 0;
  static constexpr unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
  char32_t v = static_cast<unsigned char>(s[0]) & lead_mask[n];
  for (std::size_t k = 1; k < n; ++k) v = (v << 6) | (static_cast<unsigned char>(s[k]) & 0x3f);
  cp = v;
  return n;
}

bool valid(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) { ++i; continue; }
    std::size_t n = valid_at(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::size_t complete_prefix(std::string_view s) noexcept {
  // Look back at most 3 bytes for an unfinished lead byte.
  std::size_t n = s.size();
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    unsigned char c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    int len = sequence_length(c);
    if (len > static_cast<int>(back)) return n - back;  // lead byte still waiting for bytes
    return n;
  }
  return n;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace vks::utf8
