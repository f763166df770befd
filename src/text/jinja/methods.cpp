// Python methods of builtin types that chat templates call (str.split, dict.get, ...) and
// the template globals HF provides (range, namespace, dict, raise_exception, strftime_now).
// Mutating list/dict methods raise like HF's ImmutableSandboxedEnvironment does.
#include <algorithm>
#include <iterator>
#include <string_view>
#include <ctime>
#include <optional>

#include "text/jinja/budget.hpp"
#include "text/jinja/interpreter.hpp"
#include "text/jinja/py_str.hpp"

namespace vks::text::jinja {

namespace {

const value* arg(const call_args& a, std::size_t i, const char* name) {
  if (i < a.pos.size()) return &a.pos[i];
  for (const auto& [k, v] : a.kw)
    if (k == name) return &v;
  return nullptr;
}

std::optional<std::string> opt_str(const call_args& a, std::size_t i, const char* name) {
  const value* v = arg(a, i, name);
  if (!v || v->is_none() || v->is_undefined()) return std::nullopt;
  if (!v->is_string()) throw_error(std::string("argument '") + name + "' must be str or None, not " + v->type_name());
  return v->str();
}

std::string req_str(const call_args& a, std::size_t i, const char* name) {
  const value* v = arg(a, i, name);
  if (!v) throw_error(std::string("missing required argument '") + name + "'");
  if (!v->is_string()) throw_error(std::string("argument '") + name + "' must be str, not " + v->type_name());
  return v->str();
}

long opt_int(const call_args& a, std::size_t i, const char* name, long dflt) {
  const value* v = arg(a, i, name);
  if (!v || v->is_none()) return dflt;
  if (v->k() != kind::integer && v->k() != kind::boolean) throw_error(std::string("argument '") + name + "' must be int");
  return static_cast<long>(v->as_int());
}

// The parts of a split exist as std::strings before they become values: refuse a split
// into more parts than the byte budget has room for before making them.
void ensure_parts_room(std::uint64_t n_parts, std::size_t n_text) {
  charge_scan(n_text);
  std::uint64_t per = 0;
  if (__builtin_mul_overflow(n_parts, std::uint64_t{sizeof(value) + sizeof(std::string)}, &per)) per = UINT64_MAX;
  ensure_room(per > UINT64_MAX - n_text ? UINT64_MAX : per + n_text);
}

value str_list(std::vector<std::string> parts) {
  array_data out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return value::make_array(std::move(out));
}

bool affix_match(const std::string& s, const value& affix, bool prefix) {
  auto one = [&](const value& v) {
    if (!v.is_string()) throw_error("startswith/endswith argument must be str or a tuple of str");
    const std::string& x = v.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_array()) {
    for (const auto& v : affix.arr())
      if (one(v)) return true;
    return false;
  }
  return one(affix);
}

// str.format with {} {0} {name} fields (format specs other than empty are not supported).
std::string str_format(const std::string& fmt, const call_args& a) {
  std::string out;
  std::size_t auto_idx = 0;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') { out += '{'; ++i; continue; }
    if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') { out += '}'; ++i; continue; }
    if (c != '{') {
      ensure_room(std::uint64_t{out.size()} + 1);
      out += c;
      continue;
    }
    std::size_t e = fmt.find('}', i);
    if (e == std::string::npos) throw_error("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, e - i - 1);
    std::size_t colon = field.find(':');
    if (colon != std::string::npos) field.resize(colon);
    const value* v = nullptr;
    if (field.empty()) v = auto_idx < a.pos.size() ? &a.pos[auto_idx++] : nullptr;
    else if (field.find_first_not_of("0123456789") == std::string::npos) {
      std::size_t k = std::stoul(field);
      v = k < a.pos.size() ? &a.pos[k] : nullptr;
    } else {
      for (const auto& [k, kv] : a.kw)
        if (k == field) v = &kv;
    }
    if (!v) throw_error("Replacement index out of range for positional args tuple");
    const std::string piece = v->is_string() ? v->str() : v->to_str();
    ensure_room(std::uint64_t{out.size()} + piece.size());
    out += piece;
    i = e;
  }
  return out;
}

// The str methods: one function each, found by name in k_str_methods (below).
template <bool prefix>
value s_affix(const std::string& s, call_args& a) {
  const value* x = arg(a, 0, "prefix");
  if (!x) throw_error(std::string(prefix ? "startswith" : "endswith") + "() takes at least 1 argument (0 given)");
  return value(affix_match(s, *x, prefix));
}

template <bool left>
value s_split(const std::string& s, call_args& a) {
  const auto sep = opt_str(a, 0, "sep");
  const long maxsplit = opt_int(a, 1, "maxsplit", -1);
  std::uint64_t n = 1;
  if (sep && !sep->empty()) n += static_cast<std::uint64_t>(py::count(s, *sep));
  else  // parts follow whitespace: ASCII spaces and, over-counting, every multi-byte lead
    for (unsigned char c : s) n += (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c >= 0xc2;
  if (maxsplit >= 0) n = std::min<std::uint64_t>(n, static_cast<std::uint64_t>(maxsplit) + 1);
  ensure_parts_room(n, s.size());
  return str_list(left ? py::split(s, sep, maxsplit) : py::rsplit(s, sep, maxsplit));
}

value s_splitlines(const std::string& s, call_args&) {
  std::uint64_t n = 1;  // line breaks are among these bytes (an over-count is harmless)
  for (unsigned char c : s) n += (c >= 0x0a && c <= 0x0d) || (c >= 0x1c && c <= 0x1e) || c == 0x85 || c == 0xa8 || c == 0xa9;
  ensure_parts_room(n, s.size());
  return str_list(py::splitlines(s));
}

template <bool left, bool right>
value s_strip(const std::string& s, call_args& a) { return value(py::strip(s, opt_str(a, 0, "chars"), left, right)); }

value s_upper(const std::string& s, call_args&) { return value(py::upper(s)); }
value s_lower(const std::string& s, call_args&) { return value(py::lower(s)); }
value s_title(const std::string& s, call_args&) { return value(py::title(s)); }
value s_capitalize(const std::string& s, call_args&) { return value(py::capitalize(s)); }

value s_replace(const std::string& s, call_args& a) {
  return value(bounded_replace(s, req_str(a, 0, "old"), req_str(a, 1, "new"), opt_int(a, 2, "count", -1)));
}

value s_find(const std::string& s, call_args& a) { return value(static_cast<std::int64_t>(py::find(s, req_str(a, 0, "sub")))); }

value s_index(const std::string& s, call_args& a) {
  long r = py::find(s, req_str(a, 0, "sub"));
  if (r < 0) throw_error("substring not found");
  return value(static_cast<std::int64_t>(r));
}

value s_rfind(const std::string& s, call_args& a) {
  std::string sub = req_str(a, 0, "sub");
  std::size_t p = s.rfind(sub);
  return value(p == std::string::npos ? std::int64_t{-1} : static_cast<std::int64_t>(py::length(std::string_view(s).substr(0, p))));
}

value s_count(const std::string& s, call_args& a) { return value(static_cast<std::int64_t>(py::count(s, req_str(a, 0, "sub")))); }
value s_format(const std::string& s, call_args& a) { return value(str_format(s, a)); }

value s_join(const std::string& s, call_args& a) {
  const value* it = arg(a, 0, "iterable");
  if (!it) throw_error("join() takes exactly one argument (0 given)");
  std::string out;
  bool first = true;
  for (const auto& v : iterate(*it)) {
    if (!v.is_string()) throw_error("sequence item: expected str instance, " + v.type_name() + " found");
    ensure_room(std::uint64_t{out.size()} + (first ? 0 : s.size()) + v.str().size());
    if (!first) out += s;
    out += v.str();
    first = false;
  }
  return value(std::move(out));
}

// str.isdigit and friends: true when s is not empty and every code point passes.
template <bool (*pred)(char32_t)>
value s_all_of(const std::string& s, call_args&) {
  if (s.empty()) return value(false);
  for (char32_t c : py::decode(s))
    if (!pred(c)) return value(false);
  return value(true);
}

bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_space(char32_t c) { return py::is_space(c); }
bool is_alpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c > 0x7f; }
bool is_alnum(char32_t c) { return is_alpha(c) || is_digit(c); }

value s_islower(const std::string& s, call_args&) { return value(py::lower(s) == s && py::upper(s) != s); }
value s_isupper(const std::string& s, call_args&) { return value(py::upper(s) == s && py::lower(s) != s); }

// Strings accept no undefined subject (a method is looked up on a value), so the table is
// {name, fn}.
struct str_method_def {
  std::string_view name;
  value (*fn)(const std::string& s, call_args& args);
};

constexpr str_method_def k_str_methods[] = {
    {"startswith", s_affix<true>},  {"endswith", s_affix<false>},         {"split", s_split<true>},
    {"rsplit", s_split<false>},     {"splitlines", s_splitlines},         {"strip", s_strip<true, true>},
    {"lstrip", s_strip<true, false>}, {"rstrip", s_strip<false, true>},   {"upper", s_upper},
    {"lower", s_lower},             {"title", s_title},                   {"capitalize", s_capitalize},
    {"replace", s_replace},         {"find", s_find},                     {"index", s_index},
    {"rfind", s_rfind},             {"count", s_count},                   {"format", s_format},
    {"join", s_join},               {"isdigit", s_all_of<is_digit>},      {"isspace", s_all_of<is_space>},
    {"isalpha", s_all_of<is_alpha>}, {"isalnum", s_all_of<is_alnum>},     {"islower", s_islower},
    {"isupper", s_isupper},
};

value string_method(const std::string& s, const std::string& name, call_args& a, bool& found) {
  const auto* m = std::find_if(std::begin(k_str_methods), std::end(k_str_methods),
                               [&](const str_method_def& d) { return d.name == name; });
  found = m != std::end(k_str_methods);
  return found ? m->fn(s, a) : value();
}

// A method of a Markup (markupsafe 3): the arguments that become part of the text are
// escaped (replace's new, join's items, format's fields, the fill character), and str
// results, alone or in a list/tuple, are Markups.
value markup_method(const value& obj, const std::string& name, call_args& a, bool& found) {
  auto esc = [](value& v) {
    if (v.is_string()) v = escape_value(v);
  };
  if (name == "replace" && a.pos.size() > 1) esc(a.pos[1]);
  if ((name == "ljust" || name == "rjust" || name == "center") && a.pos.size() > 1) esc(a.pos[1]);
  if (name == "format") {
    for (auto& v : a.pos) esc(v);
    for (auto& kv : a.kw) esc(kv.second);
  }
  if (name == "join" && !a.pos.empty()) {
    array_data items;
    for (const auto& v : iterate(a.pos[0])) items.push_back(escape_value(v));
    a.pos[0] = value::make_array(std::move(items));
  }
  return keep_markup(string_method(obj.str(), name, a, found), true);
}

[[noreturn]] void unsafe(const std::string& name, const char* type) {
  throw_error("access to attribute '" + name + "' of '" + type + "' object is unsafe.");
}

value dict_method(const value& obj, const std::string& name, call_args& a, bool& found) {
  found = true;
  const auto& items = obj.obj().items;
  if (name == "get") {
    const value* k = arg(a, 0, "key");
    if (!k) throw_error("get expected at least 1 argument, got 0");
    const value* d = arg(a, 1, "default");
    if (const value* v = obj.obj().find(*k)) return *v;
    return d ? *d : value::none();
  }
  if (name == "items") {
    array_data out;
    out.reserve(items.size());
    for (const auto& [k, v] : items) out.push_back(value::make_array({value(k), v}, seq::tuple));
    return value::make_array(std::move(out));
  }
  if (name == "keys") {
    array_data out;
    for (const auto& it : items) out.emplace_back(it.first);
    return value::make_array(std::move(out));
  }
  if (name == "values") {
    array_data out;
    for (const auto& it : items) out.push_back(it.second);
    return value::make_array(std::move(out));
  }
  if (name == "copy") {
    value o = value::make_object();
    for (const auto& [k, v] : items) o.obj().set(k, v);  // charged like any new dict
    return o;
  }
  if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear") unsafe(name, "dict");
  found = false;
  return value();
}

value list_method(const value& obj, const std::string& name, call_args& a, bool& found) {
  found = true;
  const auto& items = obj.arr();
  if (name == "index" || name == "count") {
    const value* x = arg(a, 0, "value");
    if (!x) throw_error(name + "() takes exactly one argument (0 given)");
    std::int64_t n = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!equals(items[i], *x)) continue;
      if (name == "index") return value(static_cast<std::int64_t>(i));
      ++n;
    }
    if (name == "index") throw_error(x->repr() + " is not in list");
    return value(n);
  }
  if (name == "copy") return value::make_array(items);
  if (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
      name == "reverse" || name == "sort" || name == "clear")
    unsafe(name, "list");
  found = false;
  return value();
}

std::string strftime_at(const std::string& fmt, std::int64_t epoch) {
  std::time_t t = static_cast<std::time_t>(epoch);
  std::tm tm{};
  if (epoch >= 0) gmtime_r(&t, &tm);
  else {
    t = std::time(nullptr);
    localtime_r(&t, &tm);
  }
  if (fmt.empty()) return {};
  std::string buf(fmt.size() * 4 + 64, '\0');
  std::size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  buf.resize(n);
  return buf;
}

}  // namespace

value call_method(interpreter& in, const value& obj, const std::string& name, call_args& a, bool& found) {
  (void)in;
  found = false;
  switch (obj.k()) {
    case kind::string: return obj.is_safe() ? markup_method(obj, name, a, found) : string_method(obj.str(), name, a, found);
    case kind::object:
      if (obj.obj().is_namespace) return value();
      return dict_method(obj, name, a, found);
    case kind::array: return list_method(obj, name, a, found);
    default: return value();
  }
}

void add_globals(interpreter& in, scope& globals) {
  globals.set("range", value::make_function("range", [&in](call_args& a) {
    std::int64_t start = 0, stop = 0, step = 1;
    auto as_i = [](const value& v) {
      if (v.k() != kind::integer && v.k() != kind::boolean) throw_error("'" + v.type_name() + "' object cannot be interpreted as an integer");
      return v.as_int();
    };
    if (a.pos.size() == 1) stop = as_i(a.pos[0]);
    else if (a.pos.size() == 2 || a.pos.size() == 3) {
      start = as_i(a.pos[0]);
      stop = as_i(a.pos[1]);
      if (a.pos.size() == 3) step = as_i(a.pos[2]);
    } else {
      throw_error("range expected 1 to 3 arguments, got " + std::to_string(a.pos.size()));
    }
    if (step == 0) throw_error("range() arg 3 must not be zero");
    // Unsigned arithmetic: exact for every int64 start/stop/step, no overflow.
    const bool up = step > 0;
    const bool empty = up ? stop <= start : start <= stop;
    const std::uint64_t span = up ? static_cast<std::uint64_t>(stop) - static_cast<std::uint64_t>(start)
                                   : static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(stop);
    const std::uint64_t stride = up ? static_cast<std::uint64_t>(step) : 0 - static_cast<std::uint64_t>(step);
    const std::uint64_t n_u = empty ? 0 : (span - 1) / stride + 1;
    if (n_u > 100000) throw_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    auto n = static_cast<std::int64_t>(n_u);
    if (n > 100000) throw_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    in.count_iterations(static_cast<std::size_t>(n));
    array_data out;
    out.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      out.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(start) +
                                                 static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(step)));
    return value::make_array(std::move(out));
  }));
  auto make_mapping = [](call_args& a, bool ns) {
    value o = value::make_object(ns);
    for (const auto& p : a.pos) {
      if (p.is_object())
        for (const auto& [k, v] : p.obj().items) o.obj().set(k, v);
      else if (p.is_array())
        for (const auto& kv : p.arr()) {
          std::vector<value> pair = iterate(kv);
          if (pair.size() != 2) throw_error("dictionary update sequence element has wrong length");
          o.obj().set(pair[0], pair[1]);
        }
      else throw_error("'" + p.type_name() + "' object is not iterable");
    }
    for (const auto& [k, v] : a.kw) o.obj().set(k, v);
    return o;
  };
  globals.set("namespace", value::make_function("namespace", [make_mapping](call_args& a) { return make_mapping(a, true); }));
  globals.set("dict", value::make_function("dict", [make_mapping](call_args& a) { return make_mapping(a, false); }));
  globals.set("raise_exception", value::make_function("raise_exception", [](call_args& a) -> value {
    template_error e{a.pos.empty() ? std::string() : a.pos[0].to_str()};
    e.raised = true;
    throw e;
  }));
  globals.set("strftime_now", value::make_function("strftime_now", [&in](call_args& a) {
    const value* f = arg(a, 0, "format");
    if (!f || !f->is_string()) throw_error("strftime_now() argument must be str");
    ensure_room(std::uint64_t{f->str().size()} * 4 + 64);
    return value(strftime_at(f->str(), in.limits().fixed_now));
  }));
}

}  // namespace vks::text::jinja
