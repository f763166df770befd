// Lexer: splits the source into text and tag tokens and applies whitespace control the way
// Jinja2's lexer does with trim_blocks=True and lstrip_blocks=True ({%- -%} strip all
// whitespace; {%+ +%} disable the automatic rules; lstrip only when a block/comment tag is
// preceded on its line by spaces/tabs alone; trim removes one newline after %} and #}).
#include "text/jinja/lexer.hpp"

#include <cstring>

#include "base/utf8.hpp"
#include "text/jinja/value.hpp"

namespace vks::text::jinja {

namespace {

[[noreturn]] void lex_fail(const std::string& src, std::size_t off, const std::string& msg) {
  template_error e{msg};
  offset_to_line_col(src, off, e.line, e.col);
  throw e;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

void rstrip_all(std::string& s) {
  while (!s.empty() && is_space(s.back())) s.pop_back();
}

int hex_val(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class lexer {
 public:
  explicit lexer(const std::string& src) : src_(src) {}

  std::vector<token> run() {
    std::size_t pos = 0;
    bool line_starting = true;
    bool strip_next = false;  // a '-' closed the previous tag
    while (pos < src_.size()) {
      std::size_t start = find_tag(pos);
      std::string text = src_.substr(pos, start == std::string::npos ? std::string::npos : start - pos);
      if (strip_next) {
        std::size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        text.erase(0, k);
        strip_next = false;
      }
      if (start == std::string::npos) {
        emit_text(std::move(text), pos);
        break;
      }
      char kind = src_[start + 1];  // '{', '%' or '#'
      char mod = start + 2 < src_.size() ? src_[start + 2] : '\0';
      if (mod == '-') rstrip_all(text);
      else if (mod != '+' && kind != '{') lstrip_line(text, line_starting);
      emit_text(std::move(text), pos);
      std::size_t inner = start + 2 + ((mod == '-' || (mod == '+' && kind != '{')) ? 1 : 0);
      std::size_t end;
      if (kind == '#') end = lex_comment(start, inner, strip_next);
      else if (kind == '%' && is_raw(inner)) end = lex_raw(start, inner, strip_next);
      else end = lex_tag(start, inner, kind, strip_next);
      line_starting = end > 0 && src_[end - 1] == '\n';
      pos = end;
    }
    out_.push_back(token{tok::eof, {}, 0, 0, src_.size()});
    return std::move(out_);
  }

 private:
  std::size_t find_tag(std::size_t pos) const {
    while (true) {
      std::size_t p = src_.find('{', pos);
      if (p == std::string::npos || p + 1 >= src_.size()) return std::string::npos;
      char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  void lstrip_line(std::string& text, bool line_starting) const {
    std::size_t nl = text.rfind('\n');
    std::size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting) return;
    for (std::size_t k = l_pos; k < text.size(); ++k)
      if (text[k] != ' ' && text[k] != '\t') return;
    text.resize(l_pos);
  }

  void emit_text(std::string text, std::size_t off) {
    if (!text.empty()) out_.push_back(token{tok::text, std::move(text), 0, 0, off});
  }

  // After a closing delimiter at `after`: '-' strips following whitespace (applied to the
  // next text); otherwise trim_blocks drops one newline for block and comment tags.
  std::size_t finish_tag(std::size_t after, bool minus, bool plus, bool trim, bool& strip_next) {
    if (minus) strip_next = true;
    else if (trim && !plus && after < src_.size() && src_[after] == '\n') return after + 1;
    return after;
  }

  std::size_t lex_comment(std::size_t start, std::size_t inner, bool& strip_next) {
    std::size_t e = src_.find("#}", inner);
    if (e == std::string::npos) lex_fail(src_, start, "missing end of comment tag");
    bool minus = e > inner && src_[e - 1] == '-';
    bool plus = e > inner && src_[e - 1] == '+';
    return finish_tag(e + 2, minus, plus, true, strip_next);
  }

  bool is_raw(std::size_t inner) const {
    std::size_t p = inner;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    return src_.compare(p, 2, "%}") == 0 || src_.compare(p, 3, "-%}") == 0;
  }

  std::size_t lex_raw(std::size_t start, std::size_t inner, bool& strip_next) {
    std::size_t p = src_.find("%}", inner);
    bool minus = src_[p - 1] == '-';
    std::size_t body = finish_tag(p + 2, minus, false, true, strip_next);
    // Find {% endraw %} with optional whitespace control.
    std::size_t search = body;
    while (true) {
      std::size_t q = src_.find("{%", search);
      if (q == std::string::npos) lex_fail(src_, start, "missing endraw for raw block");
      std::size_t r = q + 2;
      bool lminus = r < src_.size() && src_[r] == '-';
      if (lminus || (r < src_.size() && src_[r] == '+')) ++r;
      while (r < src_.size() && is_space(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) { search = q + 2; continue; }
      r += 6;
      while (r < src_.size() && is_space(src_[r])) ++r;
      bool rminus = r < src_.size() && src_[r] == '-';
      if (rminus) ++r;
      if (src_.compare(r, 2, "%}") != 0) { search = q + 2; continue; }
      std::string text = src_.substr(body, q - body);
      if (strip_next) {
        std::size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        text.erase(0, k);
        strip_next = false;
      }
      if (lminus) rstrip_all(text);
      emit_text(std::move(text), body);
      return finish_tag(r + 2, rminus, false, true, strip_next);
    }
  }

  std::size_t lex_tag(std::size_t start, std::size_t p, char kind, bool& strip_next) {
    out_.push_back(token{kind == '{' ? tok::var_begin : tok::block_begin, {}, 0, 0, start});
    const char close = kind == '{' ? '}' : '%';
    std::vector<char> balance;
    while (true) {
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (p >= src_.size()) lex_fail(src_, start, kind == '{' ? "unexpected end of template, expected '}}'" : "unexpected end of template, expected '%}'");
      if (balance.empty()) {
        bool minus = src_[p] == '-' && p + 2 < src_.size() + 0 && src_[p + 1] == close && src_[p + 2] == '}';
        bool plus = kind == '%' && src_[p] == '+' && p + 2 < src_.size() && src_[p + 1] == '%' && src_[p + 2] == '}';
        if (minus || plus || (src_[p] == close && p + 1 < src_.size() && src_[p + 1] == '}')) {
          std::size_t after = p + ((minus || plus) ? 3 : 2);
          out_.push_back(token{kind == '{' ? tok::var_end : tok::block_end, {}, 0, 0, p});
          return finish_tag(after, minus, plus, kind == '%', strip_next);
        }
      }
      p = lex_one(p, balance);
    }
  }

  std::size_t lex_one(std::size_t p, std::vector<char>& balance) {
    char c = src_[p];
    if (is_name_start(c)) {
      std::size_t e = p;
      while (e < src_.size() && (is_name_start(src_[e]) || is_digit(src_[e]))) ++e;
      out_.push_back(token{tok::name, src_.substr(p, e - p), 0, 0, p});
      return e;
    }
    if (is_digit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~",
                                      "<", ">", "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"};
    for (const char* op : ops) {
      std::size_t n = std::strlen(op);
      if (src_.compare(p, n, op) == 0) {
        if (n == 1 && (c == '(' || c == '[' || c == '{')) balance.push_back(c);
        if (n == 1 && (c == ')' || c == ']' || c == '}')) {
          char want = c == ')' ? '(' : c == ']' ? '[' : '{';
          if (balance.empty() || balance.back() != want) lex_fail(src_, p, std::string("unexpected '") + c + "'");
          balance.pop_back();
        }
        out_.push_back(token{tok::op, op, 0, 0, p});
        return p + n;
      }
    }
    lex_fail(src_, p, std::string("unexpected char '") + c + "'");
  }

  std::size_t lex_number(std::size_t p) {
    std::size_t e = p;
    std::string digits;
    while (e < src_.size() && (is_digit(src_[e]) || src_[e] == '_')) {
      if (src_[e] != '_') digits += src_[e];
      ++e;
    }
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      is_float = true;
      digits += '.';
      ++e;
      while (e < src_.size() && (is_digit(src_[e]) || src_[e] == '_')) {
        if (src_[e] != '_') digits += src_[e];
        ++e;
      }
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      std::size_t q = e + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        is_float = true;
        digits += 'e';
        digits.append(src_, e + 1, q - e - 1);
        e = q;
        while (e < src_.size() && is_digit(src_[e])) digits += src_[e++];
      }
    }
    token t{is_float ? tok::floating : tok::integer, {}, 0, 0, p};
    try {
      if (is_float) t.f = std::stod(digits);
      else t.i = std::stoll(digits);
    } catch (...) {
      lex_fail(src_, p, "number literal out of range");
    }
    out_.push_back(std::move(t));
    return e;
  }

  std::size_t lex_string(std::size_t p) {
    char q = src_[p];
    std::string val;
    std::size_t e = p + 1;
    while (true) {
      if (e >= src_.size()) lex_fail(src_, p, "unterminated string literal");
      char c = src_[e];
      if (c == q) break;
      if (c != '\\') { val += c; ++e; continue; }
      if (e + 1 >= src_.size()) lex_fail(src_, p, "unterminated string literal");
      e = unescape(e, val);
    }
    out_.push_back(token{tok::string, std::move(val), 0, 0, p});
    return e + 1;
  }

  // Python 'unicode-escape' rules (what Jinja applies to string literals); unknown escapes
  // are kept verbatim. Returns the offset after the escape.
  std::size_t unescape(std::size_t e, std::string& val) {
    char n = src_[e + 1];
    switch (n) {
      case 'n': val += '\n'; return e + 2;
      case 't': val += '\t'; return e + 2;
      case 'r': val += '\r'; return e + 2;
      case '\\': val += '\\'; return e + 2;
      case '\'': val += '\''; return e + 2;
      case '"': val += '"'; return e + 2;
      case 'a': val += '\a'; return e + 2;
      case 'b': val += '\b'; return e + 2;
      case 'f': val += '\f'; return e + 2;
      case 'v': val += '\v'; return e + 2;
      case '\n': return e + 2;
      case 'x': case 'u': case 'U': {
        int n_digits = n == 'x' ? 2 : n == 'u' ? 4 : 8;
        std::uint32_t cp = 0;
        for (int k = 0; k < n_digits; ++k) {
          std::size_t at = e + 2 + static_cast<std::size_t>(k);
          int h = at < src_.size() ? hex_val(src_[at]) : -1;
          if (h < 0) lex_fail(src_, e, "truncated \\" + std::string(1, n) + " escape in string literal");
          cp = cp * 16 + static_cast<std::uint32_t>(h);
        }
        if (cp > 0x10FFFF) lex_fail(src_, e, "illegal Unicode character in string literal");
        utf8::append(val, cp);
        return e + 2 + static_cast<std::size_t>(n_digits);
      }
      default:
        if (n >= '0' && n <= '7') {
          std::uint32_t cp = 0;
          std::size_t k = e + 1;
          for (int d = 0; d < 3 && k < src_.size() && src_[k] >= '0' && src_[k] <= '7'; ++d, ++k) cp = cp * 8 + static_cast<std::uint32_t>(src_[k] - '0');
          utf8::append(val, cp);
          return k;
        }
        val += '\\';
        return e + 1;
    }
  }

  const std::string& src_;
  std::vector<token> out_;
};

}  // namespace

std::string normalise_source(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<token> lex(const std::string& src) { return lexer(src).run(); }

void offset_to_line_col(const std::string& src, std::size_t offset, int& line, int& col) {
  line = 1;
  col = 1;
  for (std::size_t i = 0; i < offset && i < src.size(); ++i) {
    if (src[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
}

}  // namespace vks::text::jinja
