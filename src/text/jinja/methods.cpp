// Python methods of builtin types that chat templates call (str.split, dict.get, ...) and
// the template globals HF provides (range, namespace, dict, raise_exception, strftime_now).
// Mutating list/dict methods raise like HF's ImmutableSandboxedEnvironment does.
#include <algorithm>
#include <iterator>
#include <string_view>
#include <ctime>
#include <optional>

#include <utf8proc.h>

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

// The code points s[start:end] (Python slice bounds, None for absent) for find & co.
struct str_range {
  std::u32string text;
  std::int64_t offset = 0;
};

str_range range_of(const std::string& s, const call_args& a, std::size_t first) {
  charge_scan(s.size());
  str_range r{py::decode(s), 0};
  const auto n = static_cast<std::int64_t>(r.text.size());
  auto bound = [&](std::size_t i, const char* name, std::int64_t dflt) {
    const value* v = arg(a, i, name);
    if (!v || v->is_none()) return dflt;
    if (v->k() != kind::integer && v->k() != kind::boolean) throw_error("slice indices must be integers or None");
    std::int64_t x = v->as_int();
    if (x < 0) x = std::max<std::int64_t>(0, x + n);
    return std::min(x, n);
  };
  const std::int64_t b = bound(first, "start", 0), e = bound(first + 1, "end", n);
  r.offset = b;
  r.text = e > b ? r.text.substr(static_cast<std::size_t>(b), static_cast<std::size_t>(e - b)) : std::u32string();
  return r;
}

// The str methods: one function each, found by name in k_str_methods (below).
template <bool prefix>
value s_affix(const std::string& s, call_args& a) {
  const value* x = arg(a, 0, "prefix");
  if (!x) throw_error(std::string(prefix ? "startswith" : "endswith") + "() takes at least 1 argument (0 given)");
  if (a.pos.size() > 1 || arg(a, 99, "start") || arg(a, 99, "end"))  // s[start:end]
    return value(affix_match(py::encode(range_of(s, a, 1).text), *x, prefix));
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

value s_splitlines(const std::string& s, call_args& a) {
  const value* keep = arg(a, 0, "keepends");
  std::uint64_t n = 1;  // line breaks are among these bytes (an over-count is harmless)
  for (unsigned char c : s) n += (c >= 0x0a && c <= 0x0d) || (c >= 0x1c && c <= 0x1e) || c == 0x85 || c == 0xa8 || c == 0xa9;
  ensure_parts_room(n, s.size());
  return str_list(py::splitlines(s, keep && keep->truthy()));
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

// find/rfind/index/rindex: the code-point index of sub in s[start:end], or -1 / ValueError.
template <bool reverse, bool raise>
value s_search(const std::string& s, call_args& a) {
  const std::u32string sub = py::decode(req_str(a, 0, "sub"));
  const str_range r = range_of(s, a, 1);
  const std::size_t p = reverse ? r.text.rfind(sub) : r.text.find(sub);
  if (p == std::u32string::npos) {
    if (raise) throw_error("substring not found");
    return value(std::int64_t{-1});
  }
  return value(static_cast<std::int64_t>(p) + r.offset);
}

value s_count(const std::string& s, call_args& a) {
  const std::u32string sub = py::decode(req_str(a, 0, "sub"));
  const str_range r = range_of(s, a, 1);
  if (sub.empty()) return value(static_cast<std::int64_t>(r.text.size() + 1));
  std::int64_t n = 0;
  for (std::size_t p = r.text.find(sub); p != std::u32string::npos; p = r.text.find(sub, p + sub.size())) ++n;
  return value(n);
}

// Width arguments are bounded by the byte budget before anything is built.
std::size_t width_arg(const call_args& a, std::size_t i, const char* name) {
  const value* w = arg(a, i, name);
  if (!w || (w->k() != kind::integer && w->k() != kind::boolean)) throw_error(std::string(name) + " must be an integer");
  const std::int64_t n = std::max<std::int64_t>(0, w->as_int());
  ensure_room(static_cast<std::uint64_t>(n) * 4);
  return static_cast<std::size_t>(n);
}

// center/ljust/rjust(width, fillchar=' ').
template <char align>
value s_justify(const std::string& s, call_args& a) {
  const std::size_t width = width_arg(a, 0, "width");
  std::u32string fill = U" ";
  if (const auto f = opt_str(a, 1, "fillchar")) fill = py::decode(*f);
  if (fill.size() != 1) throw_error("The fill character must be exactly one character long");
  const std::size_t len = py::length(s);
  if (width <= len) return value(s);
  const std::size_t n = width - len;
  // CPython's center puts the odd pad character on the left when the width is odd.
  const std::size_t left = align == '<' ? 0 : align == '>' ? n : n / 2 + (n & width & 1);
  const std::string f = py::encode(fill);
  std::string out;
  for (std::size_t i = 0; i < left; ++i) out += f;
  out += s;
  for (std::size_t i = left; i < n; ++i) out += f;
  return value(std::move(out));
}

value s_zfill(const std::string& s, call_args& a) {
  const std::size_t width = width_arg(a, 0, "width");
  const std::size_t len = py::length(s);
  if (width <= len) return value(s);
  const std::size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
  return value(s.substr(0, sign) + std::string(width - len, '0') + s.substr(sign));
}

template <bool reverse>
value s_partition(const std::string& s, call_args& a) {
  const std::string sep = req_str(a, 0, "sep");
  if (sep.empty()) throw_error("empty separator");
  const std::size_t p = reverse ? s.rfind(sep) : s.find(sep);
  array_data parts;
  if (p == std::string::npos) {
    if (reverse) parts = {value(""), value(""), value(s)};
    else parts = {value(s), value(""), value("")};
  } else {
    parts = {value(s.substr(0, p)), value(sep), value(s.substr(p + sep.size()))};
  }
  return value::make_array(std::move(parts), seq::tuple);
}

template <bool prefix>
value s_remove_affix(const std::string& s, call_args& a) {
  const std::string x = req_str(a, 0, prefix ? "prefix" : "suffix");
  if (x.size() > s.size()) return value(s);
  if (prefix) return value(s.compare(0, x.size(), x) == 0 ? s.substr(x.size()) : s);
  return value(s.compare(s.size() - x.size(), x.size(), x) == 0 ? s.substr(0, s.size() - x.size()) : s);
}

value s_swapcase(const std::string& s, call_args&) {
  charge_scan(s.size());
  std::u32string u = py::decode(s);
  for (char32_t& c : u) {
    const auto cp = static_cast<utf8proc_int32_t>(c);
    const utf8proc_int32_t lo = utf8proc_tolower(cp), up = utf8proc_toupper(cp);
    c = static_cast<char32_t>(lo != cp ? lo : up);
  }
  return value(py::encode(u));
}

value s_expandtabs(const std::string& s, call_args& a) {
  const value* t = arg(a, 0, "tabsize");
  const std::int64_t tab = t && t->is_number() ? t->as_int() : 8;
  std::string out;
  std::int64_t col = 0;
  for (char32_t c : py::decode(s)) {
    if (c == U'\t') {
      const std::int64_t n = tab > 0 ? tab - col % tab : 0;
      ensure_room(out.size() + static_cast<std::uint64_t>(n));
      out.append(static_cast<std::size_t>(n), ' ');
      col += n;
    } else {
      out += py::encode(std::u32string_view(&c, 1));
      col = c == U'\n' || c == U'\r' ? 0 : col + 1;
    }
  }
  return value(std::move(out));
}

value s_istitle(const std::string& s, call_args&) {
  return value(py::title(s) == s && (py::lower(s) != s || py::upper(s) != s));
}

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
    {"replace", s_replace},         {"find", s_search<false, false>},     {"index", s_search<false, true>},
    {"rfind", s_search<true, false>}, {"rindex", s_search<true, true>},   {"count", s_count},
    {"format", s_format},           {"join", s_join},                     {"isdigit", s_all_of<is_digit>},
    {"isspace", s_all_of<is_space>}, {"isalpha", s_all_of<is_alpha>},     {"isalnum", s_all_of<is_alnum>},
    {"isdecimal", s_all_of<is_digit>}, {"isnumeric", s_all_of<is_digit>}, {"islower", s_islower},
    {"isupper", s_isupper},         {"istitle", s_istitle},               {"center", s_justify<'^'>},
    {"ljust", s_justify<'<'>},      {"rjust", s_justify<'>'>},            {"zfill", s_zfill},
    {"partition", s_partition<false>}, {"rpartition", s_partition<true>}, {"removeprefix", s_remove_affix<true>},
    {"removesuffix", s_remove_affix<false>}, {"swapcase", s_swapcase},    {"casefold", s_lower},
    {"expandtabs", s_expandtabs},
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
