// Python string helpers for the Jinja engine (see py_str.hpp). Invalid UTF-8 bytes decode
// to U+FFFD so that hostile input never breaks an invariant.
#include "text/jinja/py_str.hpp"

#include <utf8proc.h>

namespace vks::text::jinja::py {

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                              static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) {
      out += U'\uFFFD';
      ++i;
    } else {
      out += static_cast<char32_t>(cp);
      i += static_cast<std::size_t>(n);
    }
  }
  return out;
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    utf8proc_uint8_t buf[4];
    auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
  }
  return out;
}

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

std::size_t length(std::string_view s) {
  if (is_ascii(s)) return s.size();
  return decode(s).size();
}

bool is_space(char32_t c) {
  return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string u = decode(s);
  std::u32string set = chars ? decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  std::size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_it(u[b])) ++b;
  if (right)
    while (e > b && strip_it(u[e - 1])) --e;
  return encode(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, long maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    std::size_t pos = 0;
    while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
      std::size_t p = s.find(*sep, pos);
      if (p == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, p - pos));
      pos = p + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::u32string u = decode(s);
  std::size_t i = 0;
  while (true) {
    while (i < u.size() && is_space(u[i])) ++i;
    if (i >= u.size()) break;
    if (maxsplit >= 0 && static_cast<long>(out.size()) >= maxsplit) {
      std::size_t e = u.size();
      while (e > i && is_space(u[e - 1])) --e;
      out.push_back(encode(std::u32string_view(u).substr(i, e - i)));
      break;
    }
    std::size_t j = i;
    while (j < u.size() && !is_space(u[j])) ++j;
    out.push_back(encode(std::u32string_view(u).substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, long maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    std::size_t end = s.size();
    while (static_cast<long>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      std::size_t p = s.rfind(*sep, end - sep->size());
      if (p == std::string_view::npos) break;
      out.emplace_back(s.substr(p + sep->size(), end - p - sep->size()));
      end = p;
    }
    out.emplace_back(s.substr(0, end));
  } else {
    std::u32string u = decode(s);
    std::size_t e = u.size();
    while (true) {
      while (e > 0 && is_space(u[e - 1])) --e;
      if (e == 0) break;
      if (static_cast<long>(out.size()) >= maxsplit) {
        std::size_t b = 0;
        while (b < e && is_space(u[b])) ++b;
        out.push_back(encode(std::u32string_view(u).substr(b, e - b)));
        break;
      }
      std::size_t b = e;
      while (b > 0 && !is_space(u[b - 1])) --b;
      out.push_back(encode(std::u32string_view(u).substr(b, e - b)));
      e = b;
    }
  }
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  std::size_t start = 0, i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;  // bytes of the line boundary at i
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) n = 1;
    else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) n = 2;  // U+0085
    else if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
             (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9))
      n = 3;  // U+2028, U+2029
    if (!n) {
      ++i;
      continue;
    }
    if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') n = 2;
    out.emplace_back(s.substr(start, (keepends ? i + n : i) - start));
    i += n;
    start = i;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, long count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between code points
    std::u32string u = decode(s);
    long n = 0;
    for (std::size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || n < count) { out += to; ++n; }
      if (i < u.size()) out += encode(std::u32string_view(&u[i], 1));
    }
    return out;
  }
  std::size_t pos = 0;
  long n = 0;
  while (count < 0 || n < count) {
    std::size_t p = s.find(from, pos);
    if (p == std::string_view::npos) break;
    out.append(s.substr(pos, p - pos));
    out.append(to);
    pos = p + from.size();
    ++n;
  }
  out.append(s.substr(pos));
  return out;
}

static std::string map_case(std::string_view s, bool up) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out) {
      if (up && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
      if (!up && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    }
    return out;
  }
  std::u32string u = decode(s);
  for (char32_t& c : u)
    c = static_cast<char32_t>(up ? utf8proc_toupper(static_cast<utf8proc_int32_t>(c)) : utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  return encode(u);
}

std::string upper(std::string_view s) { return map_case(s, true); }
std::string lower(std::string_view s) { return map_case(s, false); }

static bool is_cased_letter(char32_t c) {
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

std::string title(std::string_view s) {
  std::u32string u = decode(s);
  bool prev_cased = false;
  for (char32_t& c : u) {
    auto ci = static_cast<utf8proc_int32_t>(c);
    if (is_cased_letter(c)) {
      c = static_cast<char32_t>(prev_cased ? utf8proc_tolower(ci) : utf8proc_totitle(ci));
      prev_cased = true;
    } else {
      prev_cased = false;
    }
  }
  return encode(u);
}

std::string capitalize(std::string_view s) {
  std::u32string u = decode(s);
  for (std::size_t i = 0; i < u.size(); ++i) {
    auto ci = static_cast<utf8proc_int32_t>(u[i]);
    u[i] = static_cast<char32_t>(i == 0 ? utf8proc_totitle(ci) : utf8proc_tolower(ci));
  }
  return encode(u);
}

long count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<long>(length(s)) + 1;
  long n = 0;
  for (std::size_t p = s.find(sub); p != std::string_view::npos; p = s.find(sub, p + sub.size())) ++n;
  return n;
}

long find(std::string_view s, std::string_view sub) {
  std::size_t p = s.find(sub);
  if (p == std::string_view::npos) return -1;
  return static_cast<long>(length(s.substr(0, p)));
}

}  // namespace vks::text::jinja::py
