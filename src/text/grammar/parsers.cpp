#include "text/grammar/parsers.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "base/utf8.hpp"

namespace vks::text::grammar {

namespace {

constexpr char32_t k_max_cp = 0x10ffff;

// The code points in none of `rs` (rs sorted or not).
std::vector<char_range> complement(std::vector<char_range> rs) {
  std::sort(rs.begin(), rs.end(), [](const char_range& a, const char_range& b) { return a.lo < b.lo; });
  std::vector<char_range> out;
  char32_t next = 0;
  for (const auto& r : rs) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    if (r.hi + 1 > next) next = r.hi + 1;
  }
  if (next <= k_max_cp) out.push_back({next, k_max_cp});
  return out;
}

// A cursor over pattern text with error reporting.
struct cursor {
  std::string_view s;
  std::size_t i = 0;
  const char* what;

  bool end() const { return i >= s.size(); }
  char peek(std::size_t k = 0) const { return i + k < s.size() ? s[i + k] : '\0'; }
  bool eat(char c) {
    if (peek() != c || end()) return false;
    ++i;
    return true;
  }
  unexpected err(const std::string& msg) const {
    return fail(errc::invalid_argument, std::string(what) + ": " + msg + " at offset " + std::to_string(i));
  }
  // One UTF-8 character (invalid bytes stand for themselves).
  char32_t take_char() {
    char32_t cp = 0;
    std::size_t n = utf8::decode(s.substr(i), cp);
    if (n == 0) {
      cp = static_cast<unsigned char>(s[i]);
      n = 1;
    }
    i += n;
    return cp;
  }
  result<char32_t> hex(int digits) {
    char32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      char c = peek();
      if (!std::isxdigit(static_cast<unsigned char>(c))) return err("bad hex escape");
      v = v * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
      ++i;
    }
    if (v > k_max_cp) return err("code point out of range");
    return v;
  }
  // The character after a backslash, for escapes common to both notations; nullopt
  // when it is none of them (the caller decides).
  result<std::optional<char32_t>> common_escape() {
    char c = peek();
    switch (c) {
      case 'n': ++i; return std::optional<char32_t>('\n');
      case 'r': ++i; return std::optional<char32_t>('\r');
      case 't': ++i; return std::optional<char32_t>('\t');
      case 'f': ++i; return std::optional<char32_t>('\f');
      case 'v': ++i; return std::optional<char32_t>('\v');
      case '0': ++i; return std::optional<char32_t>(U'\0');
      case 'x': {
        ++i;
        auto v = hex(2);
        if (!v) return fail(std::move(v).error());
        return std::optional<char32_t>(*v);
      }
      case 'u': {
        ++i;
        auto v = hex(4);
        if (!v) return fail(std::move(v).error());
        return std::optional<char32_t>(*v);
      }
      case 'U': {
        ++i;
        auto v = hex(8);
        if (!v) return fail(std::move(v).error());
        return std::optional<char32_t>(*v);
      }
      default: return std::optional<char32_t>();
    }
  }
};

// A quantifier at the cursor, `*` `+` `?` `{m}` `{m,}` `{m,n}`, as (min, max); nullopt
// (cursor unchanged) when there is none, a '{' that starts no {m,n} included.
result<std::optional<std::pair<int, int>>> take_quantifier(cursor& c) {
  using bounds = std::optional<std::pair<int, int>>;
  switch (c.peek()) {
    case '*': ++c.i; return bounds({0, k_unbounded});
    case '+': ++c.i; return bounds({1, k_unbounded});
    case '?': ++c.i; return bounds({0, 1});
    case '{': break;
    default: return bounds();
  }
  const std::size_t save = c.i;
  auto number = [&](int& v) {
    const std::size_t b = c.i;
    long long x = 0;
    while (std::isdigit(static_cast<unsigned char>(c.peek()))) {
      x = std::min<long long>(x * 10 + (c.peek() - '0'), 1'000'000);
      ++c.i;
    }
    v = static_cast<int>(x);
    return c.i > b;
  };
  ++c.i;  // {
  int lo = 0, hi = 0;
  if (number(lo)) {
    if (c.eat('}')) return bounds({lo, lo});
    if (c.eat(',')) {
      if (c.eat('}')) return bounds({lo, k_unbounded});
      if (number(hi) && c.eat('}')) {
        if (hi < lo) return c.err("repetition {m,n} with n < m");
        return bounds({lo, hi});
      }
    }
  }
  c.i = save;
  return bounds();
}

// ---------------------------------------------------------------------------- GBNF

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

class gbnf_parser {
 public:
  explicit gbnf_parser(std::string_view text) : c_{text, 0, "grammar"} {}

  result<grammar> run() {
    skip();
    if (c_.end()) return c_.err("empty grammar");
    while (!c_.end()) {
      std::string name = take_name();
      if (name.empty()) return c_.err("expected a rule name");
      skip();
      if (c_.s.substr(c_.i, 3) != "::=") return c_.err("expected ::= after `" + name + "`");
      c_.i += 3;
      std::uint32_t r = b_.rule_id(name);
      if (b_.defined(r)) return c_.err("rule `" + name + "` is defined twice");
      auto alts = alternates(0);
      if (!alts) return fail(std::move(alts).error());
      for (auto& a : *alts) b_.add_alt(r, std::move(a));
      skip();
    }
    std::uint32_t root = b_.rule_id("root");
    if (!b_.defined(root)) return fail(errc::invalid_argument, "grammar: no `root` rule");
    return std::move(b_).finish(root);
  }

 private:
  void skip() {
    while (!c_.end()) {
      char ch = c_.peek();
      if (ch == '#') {
        while (!c_.end() && c_.peek() != '\n') ++c_.i;
      } else if (std::isspace(static_cast<unsigned char>(ch))) {
        ++c_.i;
      } else {
        break;
      }
    }
  }
  std::string take_name() {
    std::size_t b = c_.i;
    while (!c_.end() && name_char(c_.peek())) ++c_.i;
    return std::string(c_.s.substr(b, c_.i - b));
  }
  // At `name ::=` (the start of the next rule)?
  bool at_rule_start() {
    std::size_t save = c_.i;
    std::string n = take_name();
    skip();
    bool yes = !n.empty() && c_.s.substr(c_.i, 3) == "::=";
    c_.i = save;
    return yes;
  }

  result<std::vector<sequence>> alternates(int depth) {
    if (depth > k_max_group_depth)
      return c_.err("groups nested too deeply (over " + std::to_string(k_max_group_depth) + " levels)");
    std::vector<sequence> alts;
    for (;;) {
      auto seq = sequence_(depth);
      if (!seq) return fail(std::move(seq).error());
      alts.push_back(std::move(*seq));
      skip();
      if (!c_.eat('|')) break;
    }
    return alts;
  }

  result<sequence> sequence_(int depth) {
    sequence out;
    for (;;) {
      skip();
      if (c_.end() || c_.peek() == '|' || c_.peek() == ')') break;
      if (depth == 0 && at_rule_start()) break;
      auto atom = atom_(depth);
      if (!atom) return fail(std::move(atom).error());
      auto q = quantified(std::move(*atom));
      if (!q) return fail(std::move(q).error());
      out.insert(out.end(), q->begin(), q->end());
    }
    return out;
  }

  result<sequence> quantified(sequence atom) {
    auto q = take_quantifier(c_);
    if (!q) return fail(std::move(q).error());
    if (!*q) {
      if (c_.peek() == '{') return c_.err("bad {m,n} repetition");
      return atom;
    }
    auto e = b_.repeat(atom, (*q)->first, (*q)->second, "rep");
    if (!e) return c_.err(e.error().message);
    return sequence{*e};
  }

 private:
  result<char32_t> escaped() {
    auto e = c_.common_escape();
    if (!e) return fail(std::move(e).error());
    if (*e) return **e;
    if (c_.end()) return c_.err("dangling backslash");
    return c_.take_char();  // \\ \" \[ \] \- \/ and any other character as itself
  }

  result<sequence> atom_(int depth) {
    char ch = c_.peek();
    if (ch == '"') {
      ++c_.i;
      sequence s;
      for (;;) {
        if (c_.end()) return c_.err("unterminated string literal");
        if (c_.eat('"')) break;
        char32_t cp;
        if (c_.eat('\\')) {
          auto e = escaped();
          if (!e) return fail(std::move(e).error());
          cp = *e;
        } else {
          cp = c_.take_char();
        }
        s.push_back(element::one(cp));
      }
      if (s.size() > 1) return sequence{b_.group({s}, "lit")};  // a quantifier applies to all of it
      return s;
    }
    if (ch == '[') {
      ++c_.i;
      bool neg = c_.eat('^');
      std::vector<char_range> rs;
      for (bool first = true;; first = false) {
        if (c_.end()) return c_.err("unterminated character class");
        if (c_.peek() == ']' && !first) {
          ++c_.i;
          break;
        }
        auto lo = class_char();
        if (!lo) return fail(std::move(lo).error());
        char32_t hi = *lo;
        if (c_.peek() == '-' && c_.peek(1) != ']' && c_.i + 1 < c_.s.size()) {
          ++c_.i;
          auto h = class_char();
          if (!h) return fail(std::move(h).error());
          hi = *h;
          if (hi < *lo) return c_.err("character range out of order");
        }
        rs.push_back({*lo, hi});
      }
      return sequence{element::chars(std::move(rs), neg)};
    }
    if (ch == '.') {
      ++c_.i;
      return sequence{element::any()};
    }
    if (ch == '(') {
      ++c_.i;
      auto alts = alternates(depth + 1);
      if (!alts) return fail(std::move(alts).error());
      skip();
      if (!c_.eat(')')) return c_.err("expected )");
      return sequence{b_.group(std::move(*alts), "group")};
    }
    if (name_char(ch)) {
      std::string n = take_name();
      return sequence{element::ref(b_.rule_id(n))};
    }
    return c_.err(std::string("unexpected character '") + ch + "'");
  }

  result<char32_t> class_char() {
    if (c_.eat('\\')) return escaped();
    return c_.take_char();
  }

  cursor c_;
  builder b_;
};

// ---------------------------------------------------------------------------- regex

// The part of sorted, disjoint `a` that lies in sorted, disjoint `b`.
std::vector<char_range> intersect(const std::vector<char_range>& a, const std::vector<char_range>& b) {
  std::vector<char_range> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const char32_t lo = std::max(a[i].lo, b[j].lo), hi = std::min(a[i].hi, b[j].hi);
    if (lo <= hi) out.push_back({lo, hi});
    (a[i].hi < b[j].hi) ? ++i : ++j;
  }
  return out;
}

class regex_parser {
 public:
  regex_parser(builder& b, std::string_view p, std::vector<char_range> excluded)
      : b_(b), c_{p, 0, "regex"}, excluded_(std::move(excluded)) {}

  result<element> run() {
    c_.eat('^');
    auto alts = alternation(0);
    if (!alts) return fail(std::move(alts).error());
    if (!c_.end()) return c_.err(c_.peek() == ')' ? "unbalanced )" : "unexpected character");
    return b_.group(std::move(*alts), "regex");
  }

 private:
  result<std::vector<sequence>> alternation(int depth) {
    if (depth > k_max_group_depth)
      return c_.err("groups nested too deeply (over " + std::to_string(k_max_group_depth) + " levels)");
    std::vector<sequence> alts;
    for (;;) {
      auto s = concat(depth);
      if (!s) return fail(std::move(s).error());
      alts.push_back(std::move(*s));
      if (!c_.eat('|')) break;
    }
    return alts;
  }

  result<sequence> concat(int depth) {
    sequence out;
    while (!c_.end() && c_.peek() != '|' && c_.peek() != ')') {
      if (c_.peek() == '$' && (c_.i + 1 == c_.s.size())) {  // end anchor: the match is whole anyway
        ++c_.i;
        break;
      }
      auto a = atom(depth);
      if (!a) return fail(std::move(a).error());
      auto q = quantifier(std::move(*a));
      if (!q) return fail(std::move(q).error());
      out.insert(out.end(), q->begin(), q->end());
    }
    return out;
  }

  result<sequence> quantifier(sequence atom) {
    auto q = take_quantifier(c_);
    if (!q) return fail(std::move(q).error());
    if (!*q) return atom;  // also a '{' that starts no {m,n}: a literal, read as the next atom
    if (c_.peek() == '?' || c_.peek() == '+') ++c_.i;  // lazy / possessive: same language
    if (c_.peek() == '*' || c_.peek() == '+' || c_.peek() == '?') return c_.err("nothing to repeat");
    auto e = b_.repeat(atom, (*q)->first, (*q)->second, "rx");
    if (!e) return c_.err(e.error().message);
    return sequence{*e};
  }

  // Shorthand classes; nullopt when c is not one.
  static std::optional<std::vector<char_range>> shorthand(char c) {
    std::vector<char_range> d{{'0', '9'}};
    std::vector<char_range> w{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    std::vector<char_range> s{{'\t', '\r'}, {' ', ' '}};
    switch (c) {
      case 'd': return d;
      case 'w': return w;
      case 's': return s;
      case 'D': return complement(d);
      case 'W': return complement(w);
      case 'S': return complement(s);
      default: return std::nullopt;
    }
  }

  result<element> escape_atom(bool in_class) {
    if (c_.end()) return c_.err("dangling backslash");
    char ch = c_.peek();
    if (auto sh = shorthand(ch)) {
      ++c_.i;
      return element::chars(std::move(*sh));
    }
    if (std::isdigit(static_cast<unsigned char>(ch)) && ch != '0') return c_.err("backreferences are not supported");
    if (!in_class && (ch == 'b' || ch == 'B' || ch == 'A' || ch == 'Z' || ch == 'z' || ch == 'G'))
      return c_.err(std::string("\\") + ch + " (an assertion) is not supported");
    if (in_class && ch == 'b') {
      ++c_.i;
      return element::one('\b');
    }
    auto e = c_.common_escape();
    if (!e) return fail(std::move(e).error());
    if (*e) return element::one(**e);
    if (std::isalnum(static_cast<unsigned char>(ch))) return c_.err(std::string("unknown escape \\") + ch);
    return element::one(c_.take_char());
  }

  result<sequence> atom(int depth) {
    char ch = c_.peek();
    if (ch == '(') {
      ++c_.i;
      if (c_.eat('?')) {
        if (c_.eat(':')) {
        } else if (c_.peek() == 'P' && c_.peek(1) == '<') {
          c_.i += 2;
          while (!c_.end() && c_.peek() != '>') ++c_.i;
          if (!c_.eat('>')) return c_.err("unterminated group name");
        } else if (c_.peek() == '<' && c_.peek(1) != '=' && c_.peek(1) != '!') {
          ++c_.i;
          while (!c_.end() && c_.peek() != '>') ++c_.i;
          if (!c_.eat('>')) return c_.err("unterminated group name");
        } else {
          return c_.err("lookaround and inline flags are not supported");
        }
      }
      auto alts = alternation(depth + 1);
      if (!alts) return fail(std::move(alts).error());
      if (!c_.eat(')')) return c_.err("expected )");
      return sequence{b_.group(std::move(*alts), "rx")};
    }
    if (ch == '[') {
      auto e = char_class();
      if (!e) return fail(std::move(e).error());
      return sequence{restrict(std::move(*e))};
    }
    if (ch == '.') {
      ++c_.i;
      return sequence{restrict(element::chars({{'\n', '\n'}}, true))};
    }
    if (ch == '\\') {
      ++c_.i;
      auto e = escape_atom(false);
      if (!e) return fail(std::move(e).error());
      return sequence{restrict(std::move(*e))};
    }
    if (ch == '*' || ch == '+' || ch == '?') return c_.err("nothing to repeat");
    if (ch == '^') return c_.err("^ is only supported at the start");
    if (ch == '$') return c_.err("$ is only supported at the end");
    return sequence{restrict(element::one(c_.take_char()))};
  }

  // A character set without the excluded code points.
  element restrict(element e) const {
    if (excluded_.empty()) return e;
    if (e.negated) {
      e.ranges.insert(e.ranges.end(), excluded_.begin(), excluded_.end());
      return e;
    }
    normalize_ranges(e.ranges);
    e.ranges = intersect(e.ranges, complement(excluded_));
    return e;
  }

  result<element> char_class() {
    ++c_.i;  // [
    bool neg = c_.eat('^');
    std::vector<char_range> rs;
    for (bool first = true;; first = false) {
      if (c_.end()) return c_.err("unterminated character class");
      if (c_.peek() == ']' && !first) {
        ++c_.i;
        break;
      }
      element lo_e;
      if (c_.eat('\\')) {
        auto e = escape_atom(true);
        if (!e) return fail(std::move(e).error());
        lo_e = std::move(*e);
      } else {
        lo_e = element::one(c_.take_char());
      }
      if (lo_e.negated || lo_e.ranges.size() != 1 || lo_e.ranges[0].lo != lo_e.ranges[0].hi) {
        rs.insert(rs.end(), lo_e.ranges.begin(), lo_e.ranges.end());  // a shorthand
        continue;
      }
      char32_t lo = lo_e.ranges[0].lo, hi = lo;
      if (c_.peek() == '-' && c_.peek(1) != ']' && c_.i + 1 < c_.s.size()) {
        ++c_.i;
        element hi_e;
        if (c_.eat('\\')) {
          auto e = escape_atom(true);
          if (!e) return fail(std::move(e).error());
          hi_e = std::move(*e);
        } else {
          hi_e = element::one(c_.take_char());
        }
        if (hi_e.ranges.size() != 1 || hi_e.ranges[0].lo != hi_e.ranges[0].hi) return c_.err("bad character range");
        hi = hi_e.ranges[0].lo;
        if (hi < lo) return c_.err("character range out of order");
      }
      rs.push_back({lo, hi});
    }
    return element::chars(std::move(rs), neg);
  }

  builder& b_;
  cursor c_;
  std::vector<char_range> excluded_;  // removed from every character set
};

}  // namespace

result<grammar> parse_gbnf(std::string_view text) { return gbnf_parser(text).run(); }

result<element> compile_regex(builder& b, std::string_view pattern, std::vector<char_range> excluded) {
  return regex_parser(b, pattern, std::move(excluded)).run();
}

result<grammar> parse_regex(std::string_view pattern) {
  builder b;
  std::uint32_t root = b.rule_id("root");
  auto e = compile_regex(b, pattern);
  if (!e) return fail(std::move(e).error());
  b.add_alt(root, {*e});
  return std::move(b).finish(root);
}

}  // namespace vks::text::grammar
