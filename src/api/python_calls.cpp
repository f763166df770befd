// The pythonic tool-call reply (Llama 4, Phi-4-mini, Llama 3.2 "pythonic" prompts):
// [f(a=1, b="x"), g()] with Python literals as values (strings in either quote, numbers,
// True/False/None, lists, tuples, dicts), keyword arguments only; optionally wrapped in
// <|python_start|>...<|python_end|>. A recursive-descent reader with a depth cap: hostile
// text is refused, never a deep recursion. All or nothing (tool_call_syntax.hpp).
#include <cctype>
#include <cstdint>

#include "api/json_parse.hpp"
#include "api/tool_call_syntax.hpp"
#include "base/utf8.hpp"

namespace vks::api::syntax {

namespace {

constexpr int k_max_depth = 64;

class reader {
 public:
  explicit reader(std::string_view s) : s_(s) {}

  calls call_list() {
    std::vector<tool_call> out;
    if (!eat('[')) return std::nullopt;
    if (eat(']')) return std::nullopt;  // an empty list is no call
    do {
      auto c = call();
      if (!c) return std::nullopt;
      out.push_back(std::move(*c));
    } while (eat(','));
    if (!eat(']')) return std::nullopt;
    blanks();
    if (i_ != s_.size()) return std::nullopt;
    return out;
  }

 private:
  void blanks() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    blanks();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::string ident(bool dotted) {
    blanks();
    const std::size_t from = i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (dotted && c == '.' && i_ > from) || c == '-')
        ++i_;
      else
        break;
    }
    if (i_ == from || std::isdigit(static_cast<unsigned char>(s_[from]))) return {};
    return std::string(s_.substr(from, i_ - from));
  }

  std::optional<tool_call> call() {
    std::string name = ident(true);
    if (name.empty() || !eat('(')) return std::nullopt;
    json args = json::object();
    if (!eat(')')) {
      do {
        std::string key = ident(false);
        if (key.empty() || !eat('=')) return std::nullopt;
        auto v = value(0);
        if (!v) return std::nullopt;
        args[key] = std::move(*v);
      } while (eat(','));
      if (!eat(')')) return std::nullopt;
    }
    return tool_call{new_call_id(), std::move(name), dump_json(args)};
  }

  std::optional<json> value(int depth) {
    if (depth > k_max_depth) return std::nullopt;
    blanks();
    if (i_ >= s_.size()) return std::nullopt;
    const char c = s_[i_];
    if (c == '"' || c == '\'') return string();
    if (c == '[' || c == '(') return sequence(c == '[' ? ']' : ')', depth);
    if (c == '{') return dict(depth);
    if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) return number();
    const std::string word = ident(false);
    if (word == "True" || word == "true") return json(true);
    if (word == "False" || word == "false") return json(false);
    if (word == "None" || word == "null") return json(nullptr);
    return std::nullopt;
  }

  std::optional<json> string() {
    const char q = s_[i_++];
    std::string out;
    while (i_ < s_.size()) {
      char c = s_[i_++];
      if (c == q) return json(std::move(out));
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) return std::nullopt;
      c = s_[i_++];
      switch (c) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u':
          if (!unicode_escape(out)) return std::nullopt;
          break;
        default: out += c; break;  // \\ \' \" and others as written
      }
    }
    return std::nullopt;
  }

  // \uXXXX (the "\u" read), a surrogate pair as one character: appended as UTF-8.
  bool unicode_escape(std::string& out) {
    auto hex4 = [&](std::uint32_t& v) {
      if (i_ + 4 > s_.size()) return false;
      v = 0;
      for (int k = 0; k < 4; ++k) {
        const char h = s_[i_++];
        if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
        v = v * 16 + static_cast<std::uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      return true;
    };
    std::uint32_t cp = 0;
    if (!hex4(cp)) return false;
    if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(i_, 2) == "\\u") {
      i_ += 2;
      std::uint32_t lo = 0;
      if (!hex4(lo) || lo < 0xDC00 || lo >= 0xE000) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (cp >= 0xD800 && cp < 0xE000) return false;  // a lone surrogate
    utf8::append(out, cp);
    return true;
  }

  std::optional<json> sequence(char close, int depth) {
    ++i_;
    json out = json::array();
    if (eat(close)) return out;
    do {
      blanks();
      if (i_ < s_.size() && s_[i_] == close) break;  // a trailing comma
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      out.push_back(std::move(*v));
    } while (eat(','));
    if (!eat(close)) return std::nullopt;
    return out;
  }

  std::optional<json> dict(int depth) {
    ++i_;
    json out = json::object();
    if (eat('}')) return out;
    do {
      blanks();
      if (i_ < s_.size() && s_[i_] == '}') break;
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) return std::nullopt;
      auto key = string();
      if (!key || !eat(':')) return std::nullopt;
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      out[key->get<std::string>()] = std::move(*v);
    } while (eat(','));
    if (!eat('}')) return std::nullopt;
    return out;
  }

  std::optional<json> number() {
    const std::size_t from = i_;
    while (i_ < s_.size() && std::string_view("+-.eE0123456789").find(s_[i_]) != std::string_view::npos) ++i_;
    std::string_view text = s_.substr(from, i_ - from);
    if (text.front() == '+') text.remove_prefix(1);
    json j = parse_json_or_discarded_number(text);
    if (j.is_discarded()) return std::nullopt;
    return j;
  }

  static json parse_json_or_discarded_number(std::string_view text) {
    // JSON numbers refuse "1." and ".5", which Python writes.
    std::string t(text);
    if (!t.empty() && t.back() == '.') t += '0';
    if (!t.empty() && t.front() == '.') t.insert(0, "0");
    if (t.size() > 1 && t[0] == '-' && t[1] == '.') t.insert(1, "0");
    json j = parse_json_or_discarded(t);
    return j.is_number() ? j : json(json::value_t::discarded);
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

calls parse_pythonic_reply(std::string_view text) {
  constexpr std::string_view start = "<|python_start|>", end = "<|python_end|>";
  const auto a = text.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos) return std::nullopt;
  text.remove_prefix(a);
  if (text.substr(0, start.size()) == start) {
    text.remove_prefix(start.size());
    const auto e = text.rfind(end);
    if (e != std::string_view::npos) {
      if (text.substr(e + end.size()).find_first_not_of(" \t\r\n") != std::string_view::npos) return std::nullopt;
      text = text.substr(0, e);
    }
  }
  return reader(text).call_list();
}

}  // namespace vks::api::syntax
