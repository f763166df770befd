// Value construction, Python-style conversions (str, repr, truthiness, ==, <), and HF's
// tojson serialisation (Python json.dumps with ensure_ascii=False).
#include "text/jinja/value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include <utf8proc.h>

#include "text/jinja/budget.hpp"

namespace vks::text::jinja {

void throw_error(std::string msg) { throw template_error{std::move(msg)}; }

namespace {
[[noreturn]] void too_deep() {
  throw_error("value nested too deeply (limit " + std::to_string(max_value_depth()) + ")");
}
// Recursive walkers (str, ==, <, JSON) stop here: a namespace can contain itself.
void check_walk_depth(int depth) {
  if (depth > max_value_depth()) too_deep();
  charge_steps();
}
}  // namespace

const std::string& value::empty_str() noexcept {
  static const std::string empty;
  return empty;
}

void value::set_str(std::string s) {
  charge_bytes(s.size());
  if (!s.empty()) s_ = std::make_shared<const std::string>(std::move(s));
}

int value::depth() const noexcept {
  if (k_ == kind::array) return depth_;
  if (k_ == kind::object) return obj_->depth;
  return 0;
}

value value::undefined(std::string hint) {
  value v;
  v.set_str(std::move(hint));
  return v;
}

value value::none() {
  value v;
  v.k_ = kind::none;
  return v;
}

value value::markup(std::string s) {
  value v(std::move(s));
  v.safe_ = true;
  return v;
}

std::string html_escape(std::string_view s) {
  std::size_t extra = 0;
  for (char c : s) extra += c == '&' || c == '<' || c == '>' || c == '\'' || c == '"' ? 4 : 0;
  ensure_room(s.size() + extra);
  std::string out;
  out.reserve(s.size() + extra);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&#39;"; break;
      case '"': out += "&#34;"; break;
      default: out += c;
    }
  }
  return out;
}

value escape_value(const value& v) {
  if (v.is_safe()) return v;
  return value::markup(html_escape(v.is_string() ? v.str() : v.to_str()));
}

value keep_markup(value v, bool safe) {
  if (!safe) return v;
  if (v.is_string() && !v.is_safe()) return value::markup(v.str());
  if (v.is_array()) {
    array_data items = v.arr();
    for (auto& x : items)
      if (x.is_string() && !x.is_safe()) x = value::markup(x.str());
    return value::make_array(std::move(items), v.flavour());
  }
  return v;
}

value value::make_array(array_data items, seq flavour) {
  value v;
  v.k_ = kind::array;
  v.seq_ = flavour;
  int d = 0;
  for (const auto& x : items) d = std::max(d, x.depth());
  if (d + 1 > max_value_depth()) too_deep();
  v.depth_ = static_cast<std::uint16_t>(d + 1);
  charge_bytes(items.size() * sizeof(value));
  v.arr_ = std::make_shared<array_data>(std::move(items));
  return v;
}

value value::make_object(bool is_namespace) {
  value v;
  v.k_ = kind::object;
  v.obj_ = std::make_shared<object_data>();
  v.obj_->is_namespace = is_namespace;
  if (is_namespace)
    if (render_budget* b = current_budget()) b->track_namespace(v.obj_);
  return v;
}

value value::make_function(std::string name, std::function<value(call_args&)> fn) {
  value v;
  v.k_ = kind::function;
  v.fn_ = std::make_shared<function_data>(function_data{std::move(name), std::move(fn)});
  return v;
}

value value::from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > max_value_depth()) too_deep();
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return value(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      // Integers are 64-bit signed here (Python's are unbounded): one past that range is an
      // error, never a silently wrapped negative number.
      const std::uint64_t u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw_error("integer " + std::to_string(u) + " is out of range (integers are 64-bit signed)");
      return value(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return value(j.get_ref<const std::string&>());
    case nlohmann::ordered_json::value_t::array: {
      array_data a;
      a.reserve(j.size());
      for (const auto& e : j) a.push_back(from_json(e, depth + 1));
      return make_array(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      value o = make_object();
      o.obj().items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        value x = from_json(it.value(), depth + 1);
        o.obj().depth = std::max(o.obj().depth, x.depth() + 1);
        o.obj().items.emplace_back(value(it.key()), std::move(x));
      }
      return o;
    }
    default: return none();  // binary/discarded: not produced by the JSON parser
  }
}

bool value::same_object(const value& o) const noexcept {
  if (k_ != o.k_) return false;
  switch (k_) {
    case kind::array: return arr_ == o.arr_;
    case kind::object: return obj_ == o.obj_;
    case kind::function: return fn_ == o.fn_;
    case kind::undefined: case kind::none: return true;
    case kind::boolean: return i_ == o.i_;
    default: return equals(*this, o);
  }
}

bool value::truthy() const noexcept {
  switch (k_) {
    case kind::undefined: case kind::none: return false;
    case kind::boolean: case kind::integer: return i_ != 0;
    case kind::floating: return f_ != 0.0;
    case kind::string: return s_ != nullptr;
    case kind::array: return seq_ == seq::generator || !arr_->empty();
    case kind::object: return obj_->is_namespace || !obj_->items.empty();
    case kind::function: return true;
  }
  return false;
}

std::string value::type_name() const {
  switch (k_) {
    case kind::undefined: return "Undefined";
    case kind::none: return "NoneType";
    case kind::boolean: return "bool";
    case kind::integer: return "int";
    case kind::floating: return "float";
    case kind::string: return safe_ ? "Markup" : "str";
    case kind::array: return seq_ == seq::generator ? "generator" : seq_ == seq::tuple ? "tuple" : "list";
    case kind::object: return obj_->is_namespace ? "Namespace" : "dict";
    case kind::function: return "function";
  }
  return "object";
}

void check_hashable(const value& v) {
  switch (v.k()) {
    case kind::array:
      if (v.flavour() == seq::tuple) {
        for (const auto& e : v.arr()) check_hashable(e);
        return;
      }
      [[fallthrough]];
    case kind::object: throw_error("unhashable type: '" + v.type_name() + "'");
    default: return;
  }
}

// Linear: a dict with thousands of keys is charged for its length.
const value* object_data::find(std::string_view key) const {
  if (items.size() > 32) charge_steps(items.size() / 32);
  for (const auto& [k, v] : items)
    if (k.is_string() && k.str() == key) return &v;
  return nullptr;
}

const value* object_data::find(const value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  check_hashable(key);
  if (items.size() > 32) charge_steps(items.size() / 32);
  for (const auto& [k, v] : items)
    if (!k.is_string() && equals(k, key)) return &v;
  return nullptr;
}

void object_data::set(const std::string& key, value v) { set(value(key), std::move(v)); }

void object_data::set(const value& key, value v) {
  check_hashable(key);
  const int d = std::max(v.depth(), key.depth()) + 1;
  if (d > max_value_depth()) too_deep();
  depth = std::max(depth, d);
  if (items.size() > 32) charge_steps(items.size() / 32);
  for (auto& [k, old] : items)
    if (k.is_string() == key.is_string() && equals(k, key)) { old = std::move(v); return; }
  charge_bytes(sizeof(items[0]));
  items.emplace_back(key, std::move(v));
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // e.g. "-1.2345e+05"
  bool neg = sci[0] == '-';
  std::size_t epos = sci.find('e');
  std::string mant = sci.substr(neg ? 1 : 0, epos - (neg ? 1 : 0));
  int exp = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out = neg ? "-" : "";
  if (exp < -4 || exp >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + eb;
  }
  if (exp < 0) return out + "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  auto n_int = static_cast<std::size_t>(exp + 1);
  if (digits.size() <= n_int) return out + digits + std::string(n_int - digits.size(), '0') + ".0";
  return out + digits.substr(0, n_int) + "." + digits.substr(n_int);
}

static std::string py_str_repr(const std::string& s) {
  bool has_sq = s.find('\'') != std::string::npos, has_dq = s.find('"') != std::string::npos;
  char q = (has_sq && !has_dq) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(q)) { out += '\\'; out += static_cast<char>(c); }
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else out += static_cast<char>(c);
  }
  out += q;
  return out;
}

// Python's str.isprintable for one non-ASCII code point: not Other (Cc Cf Cs Co Cn) nor a
// separator other than ' ' (Zl Zp Zs).
static bool py_printable(std::int32_t cp) {
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
      return false;
    default: return true;
  }
}

// repr(): non-printable code points escaped as \xhh, \uhhhh or \Uhhhhhhhh, as Python does.
static std::string py_repr(const std::string& s) {
  std::string ascii_part = py_str_repr(s);  // quotes, backslashes and ASCII controls
  bool plain = true;
  for (unsigned char c : s) plain = plain && c < 0x80;
  if (plain) return ascii_part;
  std::string out;
  out.reserve(ascii_part.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(ascii_part.data());
  for (std::size_t i = 0; i < ascii_part.size();) {
    utf8proc_int32_t cp = -1;
    auto n = utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(ascii_part.size() - i), &cp);
    if (n <= 0 || cp < 0x80 || py_printable(cp)) {
      const std::size_t k = n > 0 ? static_cast<std::size_t>(n) : 1;
      out.append(ascii_part, i, k);
      i += k;
      continue;
    }
    char b[16];
    if (cp < 0x100) std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned>(cp));
    else if (cp < 0x10000) std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(cp));
    else std::snprintf(b, sizeof b, "\\U%08x", static_cast<unsigned>(cp));
    out += b;
    i += static_cast<std::size_t>(n);
  }
  return out;
}

// Appends `piece` to text that will become a value, within the byte budget.
static void grow(std::string& out, std::string_view piece) {
  ensure_room(out.size() + piece.size());
  out.append(piece);
}

// Python str() (repr=false) / repr() of v appended to out; depth bounds the recursion.
static void write_str(const value& v, bool repr, int depth, std::string& out) {
  switch (v.k()) {
    case kind::string:
      if (repr && v.is_safe()) grow(out, "Markup(" + py_repr(v.str()) + ")");
      else grow(out, repr ? py_repr(v.str()) : v.str());
      return;
    case kind::array: {
      if (v.is_generator()) { grow(out, "<generator object>"); return; }
      check_walk_depth(depth);
      const bool tuple = v.flavour() == seq::tuple;
      const auto& a = v.arr();
      grow(out, tuple ? "(" : "[");
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) grow(out, ", ");
        write_str(a[i], true, depth + 1, out);
      }
      if (tuple && a.size() == 1) grow(out, ",");
      grow(out, tuple ? ")" : "]");
      return;
    }
    case kind::object: {
      check_walk_depth(depth);
      const bool ns = v.obj().is_namespace;
      grow(out, ns ? "<Namespace {" : "{");
      bool first = true;
      for (const auto& [k, x] : v.obj().items) {
        if (!first) grow(out, ", ");
        write_str(k, true, depth + 1, out);
        grow(out, ": ");
        write_str(x, true, depth + 1, out);
        first = false;
      }
      grow(out, ns ? "}>" : "}");
      return;
    }
    default: grow(out, v.to_str()); return;
  }
}

std::string value::repr() const {
  if (k_ == kind::string) return safe_ ? "Markup(" + py_repr(str()) + ")" : py_repr(str());
  return to_str();
}

std::string value::to_str() const {
  switch (k_) {
    case kind::undefined: return "";
    case kind::none: return "None";
    case kind::boolean: return i_ ? "True" : "False";
    case kind::integer: return std::to_string(i_);
    case kind::floating: return float_repr(f_);
    case kind::string: return str();
    case kind::array: case kind::object: {
      std::string out;
      write_str(*this, false, 1, out);
      return out;
    }
    case kind::function: return "<function " + fn_->name + ">";
  }
  return "";
}

// json.dumps's conversion of a dict key: str as is, int/float/bool/None spelled as JSON.
static std::string json_key(const value& k) {
  switch (k.k()) {
    case kind::string: return k.str();
    case kind::boolean: return k.as_bool() ? "true" : "false";
    case kind::none: return "null";
    case kind::integer: return std::to_string(k.as_int());
    case kind::floating: {
      const double d = k.as_double();
      return std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : float_repr(d);
    }
    default: throw_error("keys must be str, int, float, bool or None, not " + k.type_name());
  }
}

static nlohmann::ordered_json to_json_at(const value& v, int depth) {
  switch (v.k()) {
    case kind::undefined: case kind::none: case kind::function: return nullptr;
    case kind::boolean: return v.as_bool();
    case kind::integer: return v.as_int();
    case kind::floating: return v.as_double();
    case kind::string: return v.str();
    case kind::array: {
      check_walk_depth(depth);
      auto j = nlohmann::ordered_json::array();
      for (const auto& e : v.arr()) j.push_back(to_json_at(e, depth + 1));
      return j;
    }
    case kind::object: {
      check_walk_depth(depth);
      auto j = nlohmann::ordered_json::object();
      for (const auto& [k, x] : v.obj().items) j[json_key(k)] = to_json_at(x, depth + 1);
      return j;
    }
  }
  return nullptr;
}

nlohmann::ordered_json value::to_json() const { return to_json_at(*this, 1); }

static bool equals_at(const value& a, const value& b, int depth);

bool equals(const value& a, const value& b) { return equals_at(a, b, 1); }

static bool equals_at(const value& a, const value& b, int depth) {
  if (a.is_number() && b.is_number()) {
    if (a.k() == kind::floating || b.k() == kind::floating) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.k() != b.k()) return false;
  switch (a.k()) {
    case kind::undefined: case kind::none: return true;
    case kind::string: charge_scan(a.str().size()); return a.str() == b.str();
    case kind::array: {
      check_walk_depth(depth);
      if (a.same_object(b)) return true;
      if ((a.flavour() == seq::tuple) != (b.flavour() == seq::tuple)) return false;  // [1] != (1,)
      if (a.arr().size() != b.arr().size()) return false;
      for (std::size_t i = 0; i < a.arr().size(); ++i)
        if (!equals_at(a.arr()[i], b.arr()[i], depth + 1)) return false;
      return true;
    }
    case kind::object: {
      check_walk_depth(depth);
      if (a.same_object(b)) return true;
      if (a.obj().items.size() != b.obj().items.size()) return false;
      for (const auto& [k, v] : a.obj().items) {
        charge_steps(a.obj().items.size());  // linear find
        const value* o = b.obj().find(k);
        if (!o || !equals_at(v, *o, depth + 1)) return false;
      }
      return true;
    }
    default: return a.same_object(b);
  }
}

static bool less_at(const value& a, const value& b, int depth) {
  if (a.is_number() && b.is_number()) {
    if (a.k() == kind::floating || b.k() == kind::floating) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) {
    charge_scan(a.str().size());
    return a.str() < b.str();  // UTF-8 order == code point order
  }
  if (a.is_array() && b.is_array()) {
    check_walk_depth(depth);
    const auto &x = a.arr(), &y = b.arr();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less_at(x[i], y[i], depth + 1)) return true;
      if (less_at(y[i], x[i], depth + 1)) return false;
    }
    return x.size() < y.size();
  }
  throw_error("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool less(const value& a, const value& b) {
  charge_steps();
  return less_at(a, b, 1);
}

// json.dumps string escaping; ascii: ensure_ascii (every non-ASCII code point, and DEL, as
// \uXXXX, astral ones as a surrogate pair).
static void json_escape(const std::string& s, bool ascii, std::string& out) {
  out += '"';
  auto hex4 = [&out](unsigned u) {
    char b[16];
    std::snprintf(b, sizeof b, "\\u%04x", u);
    out += b;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ascii && c == 0x7f)) {
      hex4(c);
    } else if (c < 0x80 || !ascii) {
      out += static_cast<char>(c);
    } else {
      const std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      std::uint32_t cp = n == 1 ? c : c & (0xFF >> (n + 1));
      std::size_t k = 1;
      for (; k < n && i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80; ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      if (k < n) cp = 0xFFFD;  // truncated sequence: Python strings cannot hold one
      i += k - 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        hex4(0xD800 + (cp >> 10));
        hex4(0xDC00 + (cp & 0x3FF));
      } else {
        hex4(cp);
      }
    }
  }
  out += '"';
}

static void json_float(double d, std::string& out) {
  if (std::isnan(d)) out += "NaN";
  else if (std::isinf(d)) out += d < 0 ? "-Infinity" : "Infinity";
  else out += float_repr(d);
}

static void json_write(const value& v, const json_options& f, int depth, std::string& out) {
  check_walk_depth(depth + 1);
  ensure_room(out.size());
  auto newline = [&](int d) {
    ensure_room(out.size() + f.indent->size() * static_cast<std::size_t>(d));
    out += '\n';
    for (int i = 0; i < d; ++i) out += *f.indent;
  };
  switch (v.k()) {
    case kind::none: out += "null"; return;
    case kind::boolean: out += v.as_bool() ? "true" : "false"; return;
    case kind::integer: out += std::to_string(v.as_int()); return;
    case kind::floating: json_float(v.as_double(), out); return;
    case kind::string:
      ensure_room(out.size() + v.str().size());
      json_escape(v.str(), f.ascii, out);
      return;
    case kind::array: {
      if (v.is_generator()) throw_error("Object of type generator is not JSON serializable");
      if (v.arr().empty()) { out += "[]"; return; }
      out += '[';
      for (std::size_t i = 0; i < v.arr().size(); ++i) {
        if (i) out += f.item_sep;
        if (f.indent) newline(depth + 1);
        json_write(v.arr()[i], f, depth + 1, out);
      }
      if (f.indent) newline(depth);
      out += ']';
      return;
    }
    case kind::object: {
      if (v.obj().items.empty()) { out += "{}"; return; }
      std::vector<const std::pair<value, value>*> items;
      for (const auto& it : v.obj().items) items.push_back(&it);
      if (f.sort_keys)  // json.dumps sorts the keys themselves: mixed types raise as in Python
        std::stable_sort(items.begin(), items.end(), [](auto* x, auto* y) { return less(x->first, y->first); });
      out += '{';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += f.item_sep;
        if (f.indent) newline(depth + 1);
        json_escape(json_key(items[i]->first), f.ascii, out);
        out += f.key_sep;
        json_write(items[i]->second, f, depth + 1, out);
      }
      if (f.indent) newline(depth);
      out += '}';
      return;
    }
    case kind::undefined: throw_error("Object of type Undefined is not JSON serializable");
    case kind::function: throw_error("Object of type function is not JSON serializable");
  }
}

std::string to_json_text(const value& v, const json_options& o) {
  std::string out;
  json_write(v, o, 0, out);
  return out;
}

std::string to_json_text(const value& v, int indent, bool sort_keys) {
  json_options o;
  if (indent >= 0) {
    o.indent = std::string(static_cast<std::size_t>(indent), ' ');
    o.item_sep = ",";
  }
  o.sort_keys = sort_keys;
  return to_json_text(v, o);
}

}  // namespace vks::text::jinja
