// Python's str.format: replacement fields {name.attr[key]!conv:spec} (nested fields inside
// the spec, one level) and the format-spec mini-language for str, int, bool and float
// (fill, align < > ^ =, sign, #, 0, width, grouping , _, precision, types s d n c b o x X
// e E f F g G %). Widths and the result are checked against the render's byte budget.
#include <cmath>
#include <cstdio>

#include "text/jinja/budget.hpp"
#include "text/jinja/interpreter.hpp"
#include "text/jinja/py_str.hpp"

namespace vks::text::jinja {

namespace {

struct spec {
  char32_t fill = U' ';
  char align = 0;  // 0: the type's default
  char sign = '-';
  bool alt = false;
  char grouping = 0;
  std::int64_t width = 0;
  std::int64_t precision = -1;
  char type = 0;
};

spec parse_spec(const std::string& text) {
  spec s;
  std::u32string u = py::decode(text);
  std::size_t i = 0;
  auto is_align = [](char32_t c) { return c == U'<' || c == U'>' || c == U'^' || c == U'='; };
  if (u.size() >= 2 && is_align(u[1])) {
    s.fill = u[0];
    s.align = static_cast<char>(u[1]);
    i = 2;
  } else if (!u.empty() && is_align(u[0])) {
    s.align = static_cast<char>(u[0]);
    i = 1;
  }
  if (i < u.size() && (u[i] == U'+' || u[i] == U'-' || u[i] == U' ')) s.sign = static_cast<char>(u[i++]);
  if (i < u.size() && u[i] == U'#') { s.alt = true; ++i; }
  if (i < u.size() && u[i] == U'0') {
    if (!s.align) { s.fill = U'0'; s.align = '='; }
    ++i;
  }
  auto number = [&](std::int64_t& dst) {
    std::size_t b = i;
    dst = 0;
    while (i < u.size() && u[i] >= U'0' && u[i] <= U'9') {
      dst = dst * 10 + (u[i] - U'0');
      if (dst > (1 << 24)) throw_error("Too many decimal digits in format string");
      ++i;
    }
    return i > b;
  };
  number(s.width);
  if (i < u.size() && (u[i] == U',' || u[i] == U'_')) s.grouping = static_cast<char>(u[i++]);
  if (i < u.size() && u[i] == U'.') {
    ++i;
    if (!number(s.precision)) throw_error("Format specifier missing precision");
  }
  if (i < u.size()) s.type = static_cast<char>(u[i++]);
  if (i != u.size() || (s.type && u[i - 1] > 0x7f)) throw_error("Invalid format specifier '" + text + "'");
  return s;
}

// Pads `body` (after `prefix`, the sign and base prefix) to the width as the alignment says.
std::string pad(const std::string& prefix, const std::string& body, const spec& s, char dflt_align) {
  const auto len = static_cast<std::int64_t>(py::length(prefix) + py::length(body));
  if (s.width <= len) return prefix + body;
  ensure_room(static_cast<std::uint64_t>(s.width) * 4);
  const auto n = static_cast<std::size_t>(s.width - len);
  const std::string f = py::encode(std::u32string_view(&s.fill, 1));
  auto rep = [&](std::size_t k) {
    std::string r;
    for (std::size_t j = 0; j < k; ++j) r += f;
    return r;
  };
  switch (s.align ? s.align : dflt_align) {
    case '<': return prefix + body + rep(n);
    case '^': return rep(n / 2) + prefix + body + rep(n - n / 2);
    case '=': return prefix + rep(n) + body;
    default: return rep(n) + prefix + body;
  }
}

std::string group_digits(const std::string& digits, char sep, std::size_t every) {
  std::string out;
  const std::size_t n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i && (n - i) % every == 0) out += sep;
    out += digits[i];
  }
  return out;
}

std::string sign_of(bool neg, char sign) { return neg ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : ""; }

std::string format_int(std::int64_t v, const spec& s) {
  const bool neg = v < 0;
  const std::uint64_t mag = neg ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  std::string digits, prefix;
  switch (s.type) {
    case 'c': {
      if (v < 0 || v > 0x10FFFF) throw_error("%c arg not in range(0x110000)");
      char32_t c = static_cast<char32_t>(v);
      return pad("", py::encode(std::u32string_view(&c, 1)), s, '<');
    }
    case 'x': case 'X': case 'o': case 'b': {
      const unsigned base = s.type == 'o' ? 8 : s.type == 'b' ? 2 : 16;
      const char* dig = s.type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
      std::uint64_t m = mag;
      do { digits.insert(digits.begin(), dig[m % base]); m /= base; } while (m);
      if (s.alt) prefix = s.type == 'o' ? "0o" : s.type == 'b' ? "0b" : s.type == 'X' ? "0X" : "0x";
      if (s.grouping) digits = group_digits(digits, s.grouping, 4);
      break;
    }
    default:
      digits = std::to_string(mag);
      if (s.grouping) digits = group_digits(digits, s.grouping, 3);
  }
  return pad(sign_of(neg, s.sign) + prefix, digits, s, '>');
}

std::string format_float(double d, const spec& s) {
  const bool neg = std::signbit(d) && !std::isnan(d);
  const double m = std::fabs(d);
  std::string body;
  if (std::isinf(m) || std::isnan(m)) {
    body = std::isnan(m) ? "nan" : "inf";
    if (s.type == 'E' || s.type == 'F' || s.type == 'G') body = std::isnan(m) ? "NAN" : "INF";
  } else if (!s.type && s.precision < 0) {
    body = float_repr(m);
  } else {
    char t = s.type ? s.type : 'g';
    const int p = static_cast<int>(s.precision < 0 ? 6 : std::min<std::int64_t>(s.precision, 500));
    const double x = t == '%' ? m * 100 : m;
    const char ct = t == '%' ? 'f' : t == 'n' ? 'g' : t;
    std::string f = std::string("%") + (s.alt ? "#" : "") + ".*" + ct;
    std::vector<char> buf(static_cast<std::size_t>(p) + 400);
    std::snprintf(buf.data(), buf.size(), f.c_str(), p, x);
    body = buf.data();
    if (!s.type && body.find_first_of(".einf") == std::string::npos) body += ".0";  // 'g' but a float
    if (t == '%') body += '%';
  }
  if (s.grouping && std::isfinite(m)) {
    const std::size_t end = body.find_first_not_of("0123456789");
    body = group_digits(body.substr(0, end), s.grouping, 3) + (end == std::string::npos ? "" : body.substr(end));
  }
  return pad(sign_of(neg, s.sign), body, s, '>');
}

// format(v, spec_text) as Python does for the value types templates have.
std::string format_value(const value& v, const std::string& spec_text) {
  if (spec_text.empty()) return v.is_string() ? v.str() : v.to_str();
  const spec s = parse_spec(spec_text);
  switch (v.k()) {
    case kind::string: {
      if (s.type && s.type != 's') throw_error(std::string("Unknown format code '") + s.type + "' for object of type 'str'");
      if (s.align == '=') throw_error("'=' alignment not allowed in string format specifier");
      std::string body = v.str();
      if (s.precision >= 0 && py::length(body) > static_cast<std::size_t>(s.precision))
        body = py::encode(py::decode(body).substr(0, static_cast<std::size_t>(s.precision)));
      return pad("", body, s, '<');
    }
    case kind::integer: case kind::boolean:
      if (std::string_view("eEfFgG%").find(s.type) != std::string_view::npos && s.type)
        return format_float(static_cast<double>(v.as_int()), s);
      if (s.type && std::string_view("dnbcoxX").find(s.type) == std::string_view::npos)
        throw_error(std::string("Unknown format code '") + s.type + "' for object of type '" + v.type_name() + "'");
      return format_int(v.as_int(), s);
    case kind::floating:
      if (s.type && std::string_view("eEfFgGn%").find(s.type) == std::string_view::npos)
        throw_error(std::string("Unknown format code '") + s.type + "' for object of type 'float'");
      return format_float(v.as_double(), s);
    default: throw_error("unsupported format string passed to " + v.type_name() + ".__format__");
  }
}

// The value a field name ("0", "name", "0[key].attr") names.
value field_value(const std::string& name, const call_args& a, std::size_t& auto_idx) {
  std::size_t end = name.find_first_of(".[");
  const std::string head = name.substr(0, end);
  value v;
  if (head.empty()) {
    if (auto_idx >= a.pos.size()) throw_error("Replacement index " + std::to_string(auto_idx) + " out of range for positional args tuple");
    v = a.pos[auto_idx++];
  } else if (head.find_first_not_of("0123456789") == std::string::npos) {
    const std::size_t k = head.size() > 9 ? a.pos.size() : std::stoul(head);
    if (k >= a.pos.size()) throw_error("Replacement index " + head + " out of range for positional args tuple");
    v = a.pos[k];
  } else {
    bool hit = false;
    for (const auto& [k, kv] : a.kw)
      if (k == head) { v = kv; hit = true; }
    if (!hit) throw_error("KeyError: '" + head + "'");
  }
  while (end != std::string::npos) {
    if (name[end] == '.') {
      std::size_t next = name.find_first_of(".[", end + 1);
      const std::string attr = name.substr(end + 1, next == std::string::npos ? std::string::npos : next - end - 1);
      v = get_attr(v, attr);
      if (v.is_undefined()) throw_error("'" + attr + "' is not an attribute of the argument");
      end = next;
    } else {
      std::size_t close = name.find(']', end);
      if (close == std::string::npos) throw_error("Missing ']' in format string");
      const std::string key = name.substr(end + 1, close - end - 1);
      const bool digits = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos && key.size() < 10;
      value r = get_item(v, digits ? value(static_cast<std::int64_t>(std::stol(key))) : value(key));
      if (r.is_undefined()) throw_error("KeyError: " + key);
      v = r;
      end = close + 1 < name.size() ? close + 1 : std::string::npos;
      if (end != std::string::npos && name[end] != '.' && name[end] != '[')
        throw_error("Only '.' or '[' may follow ']' in format field specifier");
    }
  }
  return v;
}

}  // namespace

std::string str_format(const std::string& fmt, const call_args& a) {
  charge_scan(fmt.size());
  std::string out;
  std::size_t auto_idx = 0;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') throw_error("Single '}' encountered in format string");
    if (c != '{') {
      ensure_room(std::uint64_t{out.size()} + 1);
      out += c;
      continue;
    }
    // The field ends at the '}' that balances it (a spec may hold one nested field).
    std::size_t e = i + 1;
    for (int open = 1; e < fmt.size(); ++e) {
      if (fmt[e] == '{') ++open;
      else if (fmt[e] == '}' && --open == 0) break;
    }
    if (e >= fmt.size()) throw_error("expected '}' before end of string");
    std::string field = fmt.substr(i + 1, e - i - 1);
    std::string spec_text, conv;
    const std::size_t colon = field.find(':');
    if (colon != std::string::npos) {
      spec_text = field.substr(colon + 1);
      field.resize(colon);
    }
    if (const std::size_t bang = field.find('!'); bang != std::string::npos) {
      conv = field.substr(bang + 1);
      field.resize(bang);
      if (conv != "r" && conv != "s" && conv != "a") throw_error("Unknown conversion specifier " + conv);
    }
    if (spec_text.find('{') != std::string::npos) {  // nested fields: format the spec first
      call_args inner = a;
      spec_text = str_format(spec_text, inner);
    }
    value v = field_value(field, a, auto_idx);
    if (conv == "r" || conv == "a") v = value(v.repr());
    else if (conv == "s") v = value(v.is_string() ? v.str() : v.to_str());
    charge_steps();
    const std::string piece = format_value(v, spec_text);
    ensure_room(std::uint64_t{out.size()} + piece.size());
    out += piece;
    i = e;
  }
  return out;
}

}  // namespace vks::text::jinja
