// Value construction, Python-style conversions (str, repr, truthiness, ==, <), and HF's
// tojson serialisation (Python json.dumps with ensure_ascii=False).
#include "text/jinja/value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

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
    case nlohmann::ordered_json::value_t::number_unsigned:
      return value(static_cast<std::int64_t>(j.get<std::uint64_t>()));
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
        o.obj().items.emplace_back(it.key(), std::move(x));
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
    case kind::string: return "str";
    case kind::array: return seq_ == seq::generator ? "generator" : seq_ == seq::tuple ? "tuple" : "list";
    case kind::object: return obj_->is_namespace ? "Namespace" : "dict";
    case kind::function: return "function";
  }
  return "object";
}

// Linear: a dict with thousands of keys is charged for its length.
const value* object_data::find(std::string_view key) const {
  if (items.size() > 32) charge_steps(items.size() / 32);
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void object_data::set(const std::string& key, value v) {
  const int d = v.depth() + 1;
  if (d > max_value_depth()) too_deep();
  depth = std::max(depth, d);
  if (items.size() > 32) charge_steps(items.size() / 32);
  for (auto& [k, old] : items)
    if (k == key) { old = std::move(v); return; }
  charge_bytes(key.size() + sizeof(items[0]));
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

// Appends `piece` to text that will become a value, within the byte budget.
static void grow(std::string& out, std::string_view piece) {
  ensure_room(out.size() + piece.size());
  out.append(piece);
}

// Python str() (repr=false) / repr() of v appended to out; depth bounds the recursion.
static void write_str(const value& v, bool repr, int depth, std::string& out) {
  switch (v.k()) {
    case kind::string: grow(out, repr ? py_str_repr(v.str()) : v.str()); return;
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
        grow(out, py_str_repr(k));
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
  if (k_ == kind::string) return py_str_repr(str());
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
      for (const auto& [k, x] : v.obj().items) j[k] = to_json_at(x, depth + 1);
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

static void json_escape(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
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

static void json_write(const value& v, int indent, bool sort_keys, int depth, std::string& out) {
  check_walk_depth(depth + 1);
  ensure_room(out.size());
  auto newline = [&](int d) {
    out += '\n';
    out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(d), ' ');
  };
  const char* item_sep = indent >= 0 ? "," : ", ";
  switch (v.k()) {
    case kind::none: out += "null"; return;
    case kind::boolean: out += v.as_bool() ? "true" : "false"; return;
    case kind::integer: out += std::to_string(v.as_int()); return;
    case kind::floating: json_float(v.as_double(), out); return;
    case kind::string:
      ensure_room(out.size() + v.str().size());
      json_escape(v.str(), out);
      return;
    case kind::array: {
      if (v.is_generator()) throw_error("Object of type generator is not JSON serializable");
      if (v.arr().empty()) { out += "[]"; return; }
      out += '[';
      for (std::size_t i = 0; i < v.arr().size(); ++i) {
        if (i) out += item_sep;
        if (indent >= 0) newline(depth + 1);
        json_write(v.arr()[i], indent, sort_keys, depth + 1, out);
      }
      if (indent >= 0) newline(depth);
      out += ']';
      return;
    }
    case kind::object: {
      if (v.obj().items.empty()) { out += "{}"; return; }
      std::vector<const std::pair<std::string, value>*> items;
      for (const auto& it : v.obj().items) items.push_back(&it);
      if (sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* x, auto* y) { return x->first < y->first; });
      out += '{';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        if (indent >= 0) newline(depth + 1);
        json_escape(items[i]->first, out);
        out += ": ";
        json_write(items[i]->second, indent, sort_keys, depth + 1, out);
      }
      if (indent >= 0) newline(depth);
      out += '}';
      return;
    }
    case kind::undefined: throw_error("Object of type Undefined is not JSON serializable");
    case kind::function: throw_error("Object of type function is not JSON serializable");
  }
}

std::string to_json_text(const value& v, int indent, bool sort_keys) {
  std::string out;
  json_write(v, indent, sort_keys, 0, out);
  return out;
}

}  // namespace vks::text::jinja
