// GPT-2 byte-level table (each byte <-> one printable code point, so any byte string has a
// text form BPE can merge) and the small UTF-8 helpers the tokenizer uses.
#include <array>

#include "base/utf8.hpp"
#include "text/tokenizer/tokenizer_impl.hpp"

namespace vks::text {

namespace {

struct tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 512> to_byte{};  // code points < 512 only (the table's range)
  tables() {
    to_byte.fill(-1);
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = printable ? static_cast<uint32_t>(b) : 256 + n++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const tables& tbl() {
  static const tables t;
  return t;
}

}  // namespace

const std::array<uint32_t, 256>& byte_to_codepoint() { return tbl().to_cp; }

int codepoint_to_byte(uint32_t cp) { return cp < 512 ? tbl().to_byte[cp] : -1; }

int utf8_decode(std::string_view s, size_t i, uint32_t& cp) {
  auto c0 = static_cast<unsigned char>(s[i]);
  cp = 0xFFFFFFFFu;
  if (c0 < 0x80) { cp = c0; return 1; }
  int n = c0 >= 0xF0 ? 4 : c0 >= 0xE0 ? 3 : c0 >= 0xC2 ? 2 : 0;
  if (n == 0 || c0 > 0xF4 || i + static_cast<size_t>(n) > s.size()) return 1;
  uint32_t v = c0 & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    auto c = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
    if ((c & 0xC0) != 0x80) return 1;
    v = (v << 6) | (c & 0x3F);
  }
  if ((n == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)))
    return 1;
  cp = v;
  return n;
}


std::string byte_level_decode(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    uint32_t cp = 0;
    int n = utf8_decode(piece, i, cp);
    int b = cp == 0xFFFFFFFFu ? -1 : codepoint_to_byte(cp);
    if (b >= 0) out += static_cast<char>(b);
    else out.append(piece.substr(i, static_cast<size_t>(n)));
    i += static_cast<size_t>(n);
  }
  return out;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) utf8::append(out, tbl().to_cp[b]);
  return out;
}

}  // namespace vks::text
