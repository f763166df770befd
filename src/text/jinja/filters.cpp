// Jinja2 builtin filters and tests (the subset real chat templates use, with Jinja 3.1
// semantics), plus HF's tojson override. select/map-style filters return lists.
#include <algorithm>
#include <iterator>
#include <string_view>
#include <cmath>
#include <optional>

#include "text/jinja/budget.hpp"
#include "text/jinja/interpreter.hpp"
#include "text/jinja/py_str.hpp"

namespace vks::text::jinja {

namespace {

bool in_i64(double d) { return d > -9.2e18 && d < 9.2e18; }

const value* arg(const call_args& a, std::size_t i, const char* name) {
  if (i < a.pos.size()) return &a.pos[i];
  for (const auto& [k, v] : a.kw)
    if (k == name) return &v;
  return nullptr;
}

bool arg_bool(const call_args& a, std::size_t i, const char* name, bool dflt) {
  const value* v = arg(a, i, name);
  return v ? v->truthy() : dflt;
}

std::int64_t arg_int(const call_args& a, std::size_t i, const char* name, std::int64_t dflt) {
  const value* v = arg(a, i, name);
  if (!v || v->is_none() || v->is_undefined()) return dflt;
  if (v->k() == kind::floating) return in_i64(v->as_double()) ? static_cast<std::int64_t>(v->as_double()) : dflt;
  if (!v->is_number()) throw_error(std::string("argument '") + name + "' must be an integer");
  return v->as_int();
}

std::string str_of(const value& v) { return v.is_string() ? v.str() : v.to_str(); }

// Jinja's attribute lookup for filters: "a.b.0" walks dicts and lists.
value attr_path(const value& v, const std::string& path) {
  value cur = v;
  std::size_t pos = 0;
  while (true) {
    std::size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (cur.is_undefined()) return cur;
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos && cur.is_array())
      cur = get_item(cur, value(static_cast<std::int64_t>(std::stoll(part))));
    else
      cur = get_attr(cur, part);
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

value sort_key(const value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return value(py::lower(v.str()));
  return v;
}

std::int64_t to_int(const value& v, std::int64_t dflt) {
  switch (v.k()) {
    case kind::integer: case kind::boolean: return v.as_int();
    case kind::floating: return in_i64(v.as_double()) ? static_cast<std::int64_t>(v.as_double()) : dflt;
    case kind::string: {
      std::string s = py::strip(v.str(), std::nullopt, true, true);
      std::string digits;
      for (char c : s)
        if (c != '_') digits += c;
      try {
        std::size_t used = 0;
        long long r = std::stoll(digits, &used, 10);
        if (used == digits.size()) return r;
        double d = std::stod(digits, &used);
        if (used == digits.size() && in_i64(d)) return static_cast<std::int64_t>(d);
      } catch (...) {
      }
      return dflt;
    }
    default: return dflt;
  }
}

double to_float(const value& v, double dflt) {
  if (v.is_number()) return v.as_double();
  if (v.is_string()) {
    try {
      std::size_t used = 0;
      std::string s = py::strip(v.str(), std::nullopt, true, true);
      double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (...) {
    }
  }
  return dflt;
}

std::string do_indent(std::string s, const value* width_v, bool first, bool blank) {
  std::string ind = width_v && width_v->is_string() ? width_v->str()
                                                    : std::string(static_cast<std::size_t>(width_v ? std::max<std::int64_t>(0, std::min<std::int64_t>(width_v->as_int(), 1 << 16)) : 4), ' ');
  s += "\n";
  {  // the result is at most every line indented: refuse before building it
    std::uint64_t n_lines = 1 + static_cast<std::uint64_t>(std::count(s.begin(), s.end(), '\n'));
    std::uint64_t added = 0;
    if (__builtin_mul_overflow(n_lines, std::uint64_t{ind.size() + 1}, &added)) added = UINT64_MAX;
    ensure_room(added > UINT64_MAX - s.size() ? UINT64_MAX : s.size() + added);
  }
  std::vector<std::string> lines = py::splitlines(s);
  std::string rv;
  if (blank) {
    for (std::size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
  } else if (!lines.empty()) {
    rv = lines[0];
    for (std::size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind + lines[i]);
  }
  if (first) rv = ind + rv;
  return rv;
}

double py_round(double x, std::int64_t digits) {
  double m = std::pow(10.0, static_cast<double>(digits));
  double y = x * m;
  double r = std::nearbyint(y);  // round-half-even in the default FP environment
  return r / m;
}

// The filters: one function each, found by name in k_filters (below).
// HF's tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
value f_tojson(interpreter&, const value& v, call_args& a) {
  json_options o;
  o.ascii = arg_bool(a, 0, "ensure_ascii", false);
  if (const value* ind = arg(a, 1, "indent"); ind && !ind->is_none() && !ind->is_undefined()) {
    if (ind->is_string()) o.indent = ind->str();
    else if (ind->k() == kind::integer || ind->k() == kind::boolean)
      o.indent = std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(ind->as_int(), 0, 64)), ' ');
    else throw_error("indent must be an int or a str");
    o.item_sep = ",";
  }
  if (const value* sep = arg(a, 2, "separators"); sep && !sep->is_none() && !sep->is_undefined()) {
    if (!sep->is_array() || sep->arr().size() != 2 || !sep->arr()[0].is_string() || !sep->arr()[1].is_string())
      throw_error("separators must be a (item_separator, key_separator) pair of strings");
    o.item_sep = sep->arr()[0].str();
    o.key_sep = sep->arr()[1].str();
  }
  o.sort_keys = arg_bool(a, 3, "sort_keys", false);
  return value(to_json_text(v, o));
}

value f_default(interpreter&, const value& v, call_args& a) {
  const value* d = arg(a, 0, "default_value");
  bool boolean = arg_bool(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : value("");
  return v;
}

value f_length(interpreter&, const value& v, call_args&) {
  switch (v.k()) {
    case kind::undefined: return value(0);
    case kind::string: return value(static_cast<std::int64_t>(py::length(v.str())));
    case kind::array:
      if (v.is_generator()) break;
      return value(static_cast<std::int64_t>(v.arr().size()));
    case kind::object: return value(static_cast<std::int64_t>(v.obj().items.size()));
    default: break;
  }
  throw_error("object of type '" + v.type_name() + "' has no len()");
}

// soft_str: a str (a Markup included) is returned as it is.
value f_string(interpreter&, const value& v, call_args&) { return v.is_string() ? v : value(str_of(v)); }
value f_safe(interpreter&, const value& v, call_args&) { return v.is_safe() ? v : value::markup(str_of(v)); }

value f_trim(interpreter&, const value& v, call_args& a) {
  const value* chars = arg(a, 0, "chars");
  std::optional<std::string> c;
  if (chars && chars->is_string()) c = chars->str();
  return keep_markup(value(py::strip(str_of(v), c, true, true)), v.is_safe());
}

// These call the str method on soft_str(v): a Markup stays one.
value f_upper(interpreter&, const value& v, call_args&) { return keep_markup(value(py::upper(str_of(v))), v.is_safe()); }
value f_lower(interpreter&, const value& v, call_args&) { return keep_markup(value(py::lower(str_of(v))), v.is_safe()); }
value f_capitalize(interpreter&, const value& v, call_args&) {
  return keep_markup(value(py::capitalize(str_of(v))), v.is_safe());
}
value f_title(interpreter&, const value& v, call_args&) { return keep_markup(value(py::title(str_of(v))), v.is_safe()); }

value f_replace(interpreter&, const value& v, call_args& a) {
  const value* o = arg(a, 0, "old");
  const value* n = arg(a, 1, "new");
  if (!o || !n) throw_error("replace() requires old and new");
  return value(bounded_replace(str_of(v), str_of(*o), str_of(*n), static_cast<long>(arg_int(a, 2, "count", -1))));
}

value f_int(interpreter&, const value& v, call_args& a) { return value(to_int(v, arg_int(a, 0, "default", 0))); }

value f_float(interpreter&, const value& v, call_args& a) {
  const value* d = arg(a, 0, "default");
  return value(to_float(v, d ? d->as_double() : 0.0));
}

value f_abs(interpreter&, const value& v, call_args&) {
  if (v.k() == kind::floating) return value(std::fabs(v.as_double()));
  if (v.is_number()) {
    if (v.as_int() == INT64_MIN) throw_error("integer overflow");
    return value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  throw_error("bad operand type for abs(): '" + v.type_name() + "'");
}

value f_round(interpreter&, const value& v, call_args& a) {
  std::int64_t prec = arg_int(a, 0, "precision", 0);
  const value* m = arg(a, 1, "method");
  std::string method = m && m->is_string() ? m->str() : "common";
  double x = v.as_double(), p = std::pow(10.0, static_cast<double>(prec));
  if (method == "ceil") return value(std::ceil(x * p) / p);
  if (method == "floor") return value(std::floor(x * p) / p);
  return value(py_round(x, prec));
}

value f_list(interpreter&, const value& v, call_args&) { return value::make_array(iterate(v)); }

value f_first(interpreter&, const value& v, call_args&) {
  std::vector<value> items = iterate(v);
  return items.empty() ? value::undefined("No first item, sequence was empty.") : items.front();
}

value f_last(interpreter&, const value& v, call_args&) {
  std::vector<value> items = iterate(v);
  return items.empty() ? value::undefined("No last item, sequence was empty.") : items.back();
}

value f_reverse(interpreter&, const value& v, call_args&) {
  if (v.is_string()) {
    std::u32string u = py::decode(v.str());
    std::reverse(u.begin(), u.end());
    return value(py::encode(u));
  }
  std::vector<value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  return value::make_array(std::move(items), seq::generator);
}

value f_join(interpreter&, const value& v, call_args& a) {
  const value* d = arg(a, 0, "d");
  const value* attr = arg(a, 1, "attribute");
  std::string sep = d ? str_of(*d) : "";
  std::string out;
  bool first = true;
  for (const auto& item : iterate(v)) {
    const value picked = attr ? attr_path(item, str_of(*attr)) : item;
    const value piece = picked.is_string() ? picked : value(str_of(picked));
    const std::string& text = piece.str();
    ensure_room(std::uint64_t{out.size()} + (first ? 0 : sep.size()) + text.size());
    if (!first) out += sep;
    out += text;
    first = false;
  }
  return value(std::move(out));
}

value f_items(interpreter&, const value& v, call_args&) {
  if (v.is_undefined()) return value::make_array();
  if (!v.is_object()) throw_error("Can only get item pairs from a mapping.");
  array_data out;
  for (const auto& [k, x] : v.obj().items) out.push_back(value::make_array({value(k), x}, seq::tuple));
  return value::make_array(std::move(out), seq::generator);
}

value f_dictsort(interpreter&, const value& v, call_args& a) {
  if (!v.is_object()) throw_error("dictsort requires a mapping");
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const value* by = arg(a, 1, "by");
  bool by_value = by && by->is_string() && by->str() == "value";
  bool rev = arg_bool(a, 2, "reverse", false);
  array_data out;
  for (const auto& [k, x] : v.obj().items) out.push_back(value::make_array({value(k), x}, seq::tuple));
  std::stable_sort(out.begin(), out.end(), [&](const value& p, const value& q) {
    const value& x = p.arr()[by_value ? 1 : 0];
    const value& y = q.arr()[by_value ? 1 : 0];
    return rev ? less(sort_key(y, cs), sort_key(x, cs)) : less(sort_key(x, cs), sort_key(y, cs));
  });
  return value::make_array(std::move(out));
}

value f_sort(interpreter&, const value& v, call_args& a) {
  bool rev = arg_bool(a, 0, "reverse", false);
  bool cs = arg_bool(a, 1, "case_sensitive", false);
  const value* attr = arg(a, 2, "attribute");
  std::vector<value> items = iterate(v);
  auto key = [&](const value& x) { return sort_key(attr ? attr_path(x, str_of(*attr)) : x, cs); };
  std::stable_sort(items.begin(), items.end(), [&](const value& x, const value& y) {
    return rev ? less(key(y), key(x)) : less(key(x), key(y));
  });
  return value::make_array(std::move(items));
}

value f_unique(interpreter&, const value& v, call_args& a) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const value* attr = arg(a, 1, "attribute");
  array_data out, seen;
  for (const auto& x : iterate(v)) {
    value k = sort_key(attr ? attr_path(x, str_of(*attr)) : x, cs);
    charge_steps(seen.size());  // quadratic: each item against those kept
    bool dup = false;
    for (const auto& s : seen)
      if (equals(s, k)) { dup = true; break; }
    if (dup) continue;
    seen.push_back(k);
    out.push_back(x);
  }
  return value::make_array(std::move(out), seq::generator);
}

// min (is_min) and max.
template <bool is_min>
value f_extreme(interpreter&, const value& v, call_args& a) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const value* attr = arg(a, 1, "attribute");
  std::vector<value> items = iterate(v);
  if (items.empty()) return value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const value& x) { return sort_key(attr ? attr_path(x, str_of(*attr)) : x, cs); };
  std::size_t best = 0;
  for (std::size_t i = 1; i < items.size(); ++i) {
    bool better = is_min ? less(key(items[i]), key(items[best])) : less(key(items[best]), key(items[i]));
    if (better) best = i;
  }
  return items[best];
}

value f_sum(interpreter&, const value& v, call_args& a) {
  const value* attr = arg(a, 0, "attribute");
  const value* start = arg(a, 1, "start");
  value total = start ? *start : value(0);
  for (const auto& x : iterate(v)) total = binary_op("+", total, attr ? attr_path(x, str_of(*attr)) : x);
  return total;
}

value f_map(interpreter& in, const value& v, call_args& a) {
  if (!v.truthy()) return value::make_array({}, seq::generator);  // Jinja: `if value:` (None too)
  std::vector<value> items = iterate(v);
  array_data out;
  const value* attr = arg(a, 99, "attribute");
  if (attr) {
    const value* dflt = arg(a, 99, "default");
    for (const auto& x : items) {
      value r = attr_path(x, str_of(*attr));
      out.push_back(r.is_undefined() && dflt ? *dflt : r);
    }
    return value::make_array(std::move(out), seq::generator);
  }
  if (a.pos.empty()) return value::make_array(std::move(items), seq::generator);
  std::string f = str_of(a.pos[0]);
  call_args rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const auto& x : items) {
    charge_steps();
    out.push_back(in.apply_filter(f, x, rest));
  }
  return value::make_array(std::move(out), seq::generator);
}

// select, reject (items tested themselves), selectattr, rejectattr (by_attr: an attribute
// of each); `want`: the test result that keeps an item.
template <bool by_attr, bool want>
value f_select(interpreter& in, const value& v, call_args& a) {
  if (!v.truthy()) return value::make_array({}, seq::generator);  // Jinja: `if value:` (None too)
  std::size_t k = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty()) throw_error(std::string(want ? "selectattr" : "rejectattr") + " requires an attribute name");
    attr = str_of(a.pos[k++]);
  }
  std::optional<std::string> test;
  if (k < a.pos.size()) test = str_of(a.pos[k++]);
  call_args targs;
  targs.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(std::min(k, a.pos.size())), a.pos.end());
  array_data out;
  for (const auto& x : iterate(v)) {
    value subject = by_attr ? attr_path(x, attr) : x;
    bool r = test ? in.apply_test(*test, subject, targs) : subject.truthy();
    if (r == want) out.push_back(x);
  }
  return value::make_array(std::move(out), seq::generator);
}

value f_indent(interpreter&, const value& v, call_args& a) {
  const value* w = arg(a, 0, "width");
  return value(do_indent(str_of(v), w, arg_bool(a, 1, "first", false), arg_bool(a, 2, "blank", false)));
}

value f_center(interpreter&, const value& v, call_args& a) {
  std::int64_t width = std::min<std::int64_t>(arg_int(a, 0, "width", 80), 1 << 20);
  std::string s = str_of(v);
  auto n = static_cast<std::int64_t>(py::length(s));
  if (n >= width) return value(s);
  std::int64_t pad = width - n, left = pad / 2 + (pad & width & 1);
  return value(std::string(static_cast<std::size_t>(left), ' ') + s + std::string(static_cast<std::size_t>(pad - left), ' '));
}

value f_wordcount(interpreter&, const value& v, call_args&) {
  std::int64_t n = 0;
  bool in_word = false;
  for (char32_t c : py::decode(str_of(v))) {
    bool w = c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c > 0x7f && !py::is_space(c));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return value(n);
}

// escape: a Markup as it is; forceescape: str() first, so a Markup is escaped again.
value f_escape(interpreter&, const value& v, call_args&) { return escape_value(v); }
value f_forceescape(interpreter&, const value& v, call_args&) { return value::markup(html_escape(str_of(v))); }

value f_format(interpreter&, const value& v, call_args& a) {
  value args = value::make_array(a.pos);
  return binary_op("%", v.is_string() ? v : value(str_of(v)), args);
}

value f_batch(interpreter&, const value& v, call_args& a) {
  std::int64_t n = arg_int(a, 0, "linecount", 1);
  if (n <= 0) throw_error("batch size must be positive");
  const value* fill = arg(a, 1, "fill_with");
  array_data out, cur;
  for (const auto& x : iterate(v)) {
    cur.push_back(x);
    if (static_cast<std::int64_t>(cur.size()) == n) out.push_back(value::make_array(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    std::uint64_t room = 0;  // n > 0 here; refuse a fill of 2^60 items before making it
    if (fill && __builtin_mul_overflow(static_cast<std::uint64_t>(n), std::uint64_t{sizeof(value)}, &room)) room = UINT64_MAX;
    if (fill) ensure_room(room);
    while (fill && static_cast<std::int64_t>(cur.size()) < n) cur.push_back(*fill);
    out.push_back(value::make_array(std::move(cur)));
  }
  return value::make_array(std::move(out), seq::generator);
}

value f_attr(interpreter&, const value& v, call_args& a) {
  const value* n = arg(a, 0, "name");
  return n ? get_attr(v, str_of(*n)) : value();
}

// accepts_undefined: the filter runs on an undefined subject; the others raise Jinja's
// undefined error first (so an unknown filter on an undefined value raises that too).
struct filter_def {
  std::string_view name;
  bool accepts_undefined;
  value (*fn)(interpreter& in, const value& subject, call_args& args);
};

constexpr filter_def k_filters[] = {
    {"tojson", true, f_tojson},         {"default", true, f_default},       {"d", true, f_default},
    {"length", true, f_length},         {"count", true, f_length},          {"string", true, f_string},
    {"safe", true, f_safe},             {"trim", true, f_trim},             {"upper", true, f_upper},
    {"lower", true, f_lower},           {"capitalize", true, f_capitalize}, {"title", true, f_title},
    {"replace", true, f_replace},       {"int", true, f_int},               {"float", true, f_float},
    {"abs", false, f_abs},              {"round", false, f_round},          {"list", true, f_list},
    {"first", true, f_first},           {"last", true, f_last},             {"reverse", false, f_reverse},
    {"join", true, f_join},             {"items", true, f_items},           {"dictsort", false, f_dictsort},
    {"sort", false, f_sort},            {"unique", true, f_unique},         {"min", false, f_extreme<true>},
    {"max", false, f_extreme<false>},   {"sum", false, f_sum},              {"map", true, f_map},
    {"select", true, f_select<false, true>},     {"reject", true, f_select<false, false>},
    {"selectattr", true, f_select<true, true>},  {"rejectattr", true, f_select<true, false>},
    {"indent", true, f_indent},         {"center", false, f_center},        {"wordcount", true, f_wordcount},
    {"escape", true, f_escape},         {"e", true, f_escape},              {"forceescape", false, f_forceescape},
    {"format", false, f_format},        {"batch", false, f_batch},          {"attr", false, f_attr},
};

}  // namespace

value interpreter::apply_filter(const std::string& name, const value& v, call_args& a) {
  nesting_guard guard(nesting_, limits_.max_recursion, "chat template recursion too deep");  // map('map', ...)
  const auto* f = std::find_if(std::begin(k_filters), std::end(k_filters), [&](const filter_def& d) { return d.name == name; });
  const bool known = f != std::end(k_filters);
  if (v.is_undefined() && !(known && f->accepts_undefined)) throw_error(v.str().empty() ? "undefined value" : v.str());
  if (!known) throw_error("No filter named '" + name + "'.");
  return f->fn(*this, v, a);
}

bool interpreter::apply_test(const std::string& name, const value& v, call_args& a) {
  const value* x = arg(a, 0, "value");
  auto need = [&]() -> const value& {
    if (!x) throw_error("test '" + name + "' requires an argument");
    return *x;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.k() == kind::integer;
  if (name == "float") return v.k() == kind::floating;
  if (name == "boolean") return v.k() == kind::boolean;
  if (name == "true") return v.k() == kind::boolean && v.as_bool();
  if (name == "false") return v.k() == kind::boolean && !v.as_bool();
  if (name == "mapping") return v.is_object() && !v.obj().is_namespace;
  if (name == "iterable") return v.is_string() || v.is_array() || v.is_object() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_array() || (v.is_object() && !v.obj().is_namespace) || v.is_undefined();
  if (name == "callable") return v.k() == kind::function;
  if (name == "odd" || name == "even") {
    if (!v.is_number()) throw_error("unsupported operand type for %");
    std::int64_t r = v.as_int() % 2;
    return name == "odd" ? r != 0 : r == 0;
  }
  if (name == "divisibleby") {
    std::int64_t d = need().as_int();
    if (d == 0) throw_error("integer division or modulo by zero");
    return d == -1 || v.as_int() % d == 0;
  }
  if (name == "equalto" || name == "eq" || name == "==") return equals(v, need());
  if (name == "ne" || name == "!=") return !equals(v, need());
  if (name == "lt" || name == "lessthan" || name == "<") return less(v, need());
  if (name == "gt" || name == "greaterthan" || name == ">") return less(need(), v);
  if (name == "le" || name == "<=") return !less(need(), v);
  if (name == "ge" || name == ">=") return !less(v, need());
  if (name == "in") return contains(need(), v);
  if (name == "sameas") return v.same_object(need());
  if (name == "lower") return v.is_string() && py::lower(v.str()) == v.str();
  if (name == "upper") return v.is_string() && py::upper(v.str()) == v.str();
  if (name == "escaped") return false;
  throw_error("No test named '" + name + "'.");
}

}  // namespace vks::text::jinja
