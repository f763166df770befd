// Value construction, Python-style conversions (str, repr, truthiness, ==, <), and HF's
// tojson serialisation (Python json.dumps with ensure_ascii=False).
#include "text/jinja/value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace vks::text::jinja {

void throw_error(std::string msg) { throw template_error{std::move(msg)}; }

value value::undefined(std::string hint) {
  value v;
  v.s_ = std::move(hint);
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
  v.arr_ = std::make_shared<array_data>(std::move(items));
  return v;
}

value value::make_object(bool is_namespace) {
  value v;
  v.k_ = kind::object;
  v.obj_ = std::make_shared<object_data>();
  v.obj_->is_namespace = is_namespace;
  return v;
}

value value::make_function(std::string name, std::function<value(call_args&)> fn) {
  value v;
  v.k_ = kind::function;
  v.fn_ = std::make_shared<function_data>(function_data{std::move(name), std::move(fn)});
  return v;
}

value value::from_json(const nlohmann::ordered_json& j) {
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
      for (const auto& e : j) a.push_back(from_json(e));
      return make_array(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      value o = make_object();
      o.obj().items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) o.obj().items.emplace_back(it.key(), from_json(it.value()));
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
    case kind::string: return !s_.empty();
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

const value* object_data::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void object_data::set(const std::string& key, value v) {
  for (auto& [k, old] : items)
    if (k == key) { old = std::move(v); return; }
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

std::string value::repr() const {
  if (k_ == kind::string) return py_str_repr(s_);
  return to_str();
}

std::string value::to_str() const {
  switch (k_) {
    case kind::undefined: return "";
    case kind::none: return "None";
    case kind::boolean: return i_ ? "True" : "False";
    case kind::integer: return std::to_string(i_);
    case kind::floating: return float_repr(f_);
    case kind::string: return s_;
    case kind::array: {
      if (seq_ == seq::generator) return "<generator object>";
      const bool tuple = seq_ == seq::tuple;
      std::string out = tuple ? "(" : "[";
      for (std::size_t i = 0; i < arr_->size(); ++i) out += (i ? ", " : "") + (*arr_)[i].repr();
      if (tuple && arr_->size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case kind::object: {
      std::string out = obj_->is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, v] : obj_->items) {
        out += (first ? "" : ", ") + py_str_repr(k) + ": " + v.repr();
        first = false;
      }
      return out + (obj_->is_namespace ? "}>" : "}");
    }
    case kind::function: return "<function " + fn_->name + ">";
  }
  return "";
}

nlohmann::ordered_json value::to_json() const {
  switch (k_) {
    case kind::undefined: case kind::none: case kind::function: return nullptr;
    case kind::boolean: return as_bool();
    case kind::integer: return i_;
    case kind::floating: return f_;
    case kind::string: return s_;
    case kind::array: {
      auto j = nlohmann::ordered_json::array();
      for (const auto& e : *arr_) j.push_back(e.to_json());
      return j;
    }
    case kind::object: {
      auto j = nlohmann::ordered_json::object();
      for (const auto& [k, v] : obj_->items) j[k] = v.to_json();
      return j;
    }
  }
  return nullptr;
}

bool equals(const value& a, const value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.k() == kind::floating || b.k() == kind::floating) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.k() != b.k()) return false;
  switch (a.k()) {
    case kind::undefined: case kind::none: return true;
    case kind::string: return a.str() == b.str();
    case kind::array: {
      if (a.arr().size() != b.arr().size()) return false;
      for (std::size_t i = 0; i < a.arr().size(); ++i)
        if (!equals(a.arr()[i], b.arr()[i])) return false;
      return true;
    }
    case kind::object: {
      if (a.obj().items.size() != b.obj().items.size()) return false;
      for (const auto& [k, v] : a.obj().items) {
        const value* o = b.obj().find(k);
        if (!o || !equals(v, *o)) return false;
      }
      return true;
    }
    default: return a.same_object(b);
  }
}

bool less(const value& a, const value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.k() == kind::floating || b.k() == kind::floating) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 order == code point order
  if (a.is_array() && b.is_array()) {
    const auto &x = a.arr(), &y = b.arr();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less(x[i], y[i])) return true;
      if (less(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  throw_error("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
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
  if (depth > 512) throw_error("tojson: value nested too deeply");
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
    case kind::string: json_escape(v.str(), out); return;
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
