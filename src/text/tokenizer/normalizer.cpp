// Normalizer steps; Unicode forms use utf8proc on the non-ASCII stretches only (every form
// is the identity on ASCII; see unicode_form_pieces).
#include "text/tokenizer/normalizer.hpp"

#include "text/tokenizer/pretokenizer.hpp"

#include <utf8proc.h>

#include <cstdlib>

namespace vks::text {

namespace {

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

// Returns false (leaving out untouched) for invalid UTF-8.
bool unicode_form(std::string_view in, normalizer::op kind, std::string& out) {
  int opts = UTF8PROC_STABLE;
  switch (kind) {
    case normalizer::op::nfc: opts |= UTF8PROC_COMPOSE; break;
    case normalizer::op::nfd: opts |= UTF8PROC_DECOMPOSE; break;
    case normalizer::op::nfkc: opts |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case normalizer::op::nfkd: opts |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
    default: return false;
  }
  utf8proc_uint8_t* dst = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(in.data()),
                                    static_cast<utf8proc_ssize_t>(in.size()), &dst,
                                    static_cast<utf8proc_option_t>(opts));
  if (n < 0) {
    std::free(dst);
    return false;
  }
  out.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
  return true;
}

// The Unicode form of `in`, touching only its non-ASCII stretches: ASCII characters are
// starters that no canonical composition takes as its second element and that stop
// canonical reordering, so the text may be cut before any ASCII character and each piece
// normalized alone. A piece starts at the ASCII character before a non-ASCII one (it may
// compose with a following combining mark) and ends before the next ASCII character.
// Mostly-ASCII text (most prompts) then costs a scan. Pieces that are not valid UTF-8 are
// left as they are. Returns false when nothing needed normalizing.
bool unicode_form_pieces(std::string_view in, normalizer::op kind, std::string& out) {
  const size_t n = in.size();
  auto ascii = [&](size_t i) { return static_cast<unsigned char>(in[i]) < 0x80; };
  size_t j = 0;
  while (j < n && ascii(j)) ++j;
  if (j == n) return false;
  out.clear();
  out.reserve(n + n / 8);
  std::string piece;
  size_t i = 0;
  while (i < n) {
    while (j < n && ascii(j)) ++j;  // next non-ASCII byte at or after i
    if (j == n) {
      out.append(in.substr(i));
      break;
    }
    const size_t start = j > i ? j - 1 : j;
    out.append(in.substr(i, start - i));
    size_t k = j + 1;
    while (k < n && !ascii(k)) ++k;
    if (unicode_form(in.substr(start, k - start), kind, piece)) out.append(piece);
    else out.append(in.substr(start, k - start));
    i = k;
    j = k;
  }
  return true;
}

// Rust's char::is_whitespace (HF Strip): White_Space code points.
bool is_unicode_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Length of the whitespace character at s[i], or 0.
size_t unicode_space_at(std::string_view s, size_t i) {
  utf8proc_int32_t cp = 0;
  auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                            static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
  return n > 0 && is_unicode_space(static_cast<uint32_t>(cp)) ? static_cast<size_t>(n) : 0;
}

// Length of the whitespace character that ends at s[e], or 0.
size_t unicode_space_before(std::string_view s, size_t e) {
  size_t b = e - 1;
  while (b > 0 && e - b < 4 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  const size_t n = unicode_space_at(s, b);
  return b + n == e ? n : 0;
}

}  // namespace

std::string_view normalizer::apply(std::string_view in, std::string& buf) const {
  std::string_view cur = in;
  std::string tmp;
  for (const auto& s : steps_) {
    switch (s.kind) {
      case op::nfc: case op::nfd: case op::nfkc: case op::nfkd:
        if (!unicode_form_pieces(cur, s.kind, tmp)) continue;
        break;
      case op::prepend:
        if (cur.empty()) continue;
        tmp = s.a;
        tmp.append(cur);
        break;
      case op::replace: {
        if (s.re) {
          tmp = regex_replace_all(*s.re, cur, s.b);
          break;
        }
        if (s.a.empty() || cur.find(s.a) == std::string_view::npos) continue;
        tmp.clear();
        size_t pos = 0;
        for (size_t hit; (hit = cur.find(s.a, pos)) != std::string_view::npos; pos = hit + s.a.size()) {
          tmp.append(cur.substr(pos, hit - pos));
          tmp.append(s.b);
        }
        tmp.append(cur.substr(pos));
        break;
      }
      case op::lowercase: {
        if (!is_ascii(cur)) {
          utf8proc_uint8_t* dst = nullptr;
          auto n = utf8proc_map_custom(reinterpret_cast<const utf8proc_uint8_t*>(cur.data()),
                                       static_cast<utf8proc_ssize_t>(cur.size()), &dst, UTF8PROC_STABLE,
                                       [](utf8proc_int32_t c, void*) { return utf8proc_tolower(c); }, nullptr);
          if (n < 0) { std::free(dst); continue; }
          tmp.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
          std::free(dst);
        } else {
          tmp.assign(cur);
          for (char& c : tmp)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        }
        break;
      }
      case op::strip: {
        size_t b = 0, e = cur.size();
        if (s.left)
          while (b < e) {
            const size_t n = unicode_space_at(cur, b);
            if (!n) break;
            b += n;
          }
        if (s.right)
          while (e > b) {
            const size_t n = unicode_space_before(cur, e);
            if (!n) break;
            e -= n;
          }
        tmp.assign(cur.substr(b, e - b));
        break;
      }
    }
    buf.swap(tmp);
    cur = buf;
  }
  return cur;
}

}  // namespace vks::text
