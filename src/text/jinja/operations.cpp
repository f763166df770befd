// Python object protocol on values: attribute/item access (Jinja's getattr/getitem order),
// slicing with negative steps, iteration, `in`, and the arithmetic operators with Python's
// semantics (true division, floor division and modulo, str/list concatenation and repetition).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "text/jinja/budget.hpp"
#include "text/jinja/interpreter.hpp"
#include "text/jinja/py_str.hpp"

namespace vks::text::jinja {

static std::string missing_attr(const value& obj, const std::string& name) {
  return "'" + obj.type_name() + " object' has no attribute '" + name + "'";
}

value get_attr(const value& obj, const std::string& name) {
  if (obj.is_object()) {
    if (const value* v = obj.obj().find(name)) return *v;
  }
  return value::undefined(missing_attr(obj, name));
}

static bool norm_index(std::int64_t& i, std::size_t n) {
  if (i < 0) i += static_cast<std::int64_t>(n);
  return i >= 0 && i < static_cast<std::int64_t>(n);
}

value get_item(const value& obj, const value& key) {
  switch (obj.k()) {
    case kind::object: {
      // Jinja's getitem: an unhashable key is a TypeError it turns into undefined.
      const bool hashable = !key.is_object() && !(key.is_array() && key.flavour() != seq::tuple);
      if (hashable)
        if (const value* v = obj.obj().find(key)) return *v;
      return value::undefined("'dict object' has no attribute '" + key.to_str() + "'");
    }
    case kind::array: {
      if (key.k() == kind::integer || key.k() == kind::boolean) {
        std::int64_t i = key.as_int();
        if (norm_index(i, obj.arr().size())) return obj.arr()[static_cast<std::size_t>(i)];
        return value::undefined("list object has no element " + key.to_str());
      }
      return value::undefined("'list object' has no attribute '" + key.to_str() + "'");
    }
    case kind::string: {
      if (key.k() == kind::integer || key.k() == kind::boolean) {
        std::int64_t i = key.as_int();
        charge_scan(obj.str().size());
        if (py::is_ascii(obj.str())) {
          if (norm_index(i, obj.str().size()))
            return keep_markup(value(obj.str().substr(static_cast<std::size_t>(i), 1)), obj.is_safe());
        } else {
          std::u32string u = py::decode(obj.str());
          if (norm_index(i, u.size()))
            return keep_markup(value(py::encode(std::u32string_view(&u[static_cast<std::size_t>(i)], 1))), obj.is_safe());
        }
        return value::undefined("str object has no element " + key.to_str());
      }
      return value::undefined("'str object' has no attribute '" + key.to_str() + "'");
    }
    default: return value::undefined("'" + obj.type_name() + " object' has no attribute '" + key.to_str() + "'");
  }
}

// Python slice index normalisation (PySlice_AdjustIndices).
static void slice_indices(const value& start, const value& stop, const value& step, std::int64_t n,
                          std::int64_t& b, std::int64_t& e, std::int64_t& st) {
  auto as_i = [](const value& v) -> std::int64_t {
    if (v.k() != kind::integer && v.k() != kind::boolean) throw_error("slice indices must be integers or None");
    return v.as_int();
  };
  st = step.is_none() || step.is_undefined() ? 1 : as_i(step);
  if (st == 0) throw_error("slice step cannot be zero");
  auto adjust = [&](const value& v, std::int64_t dflt) {
    if (v.is_none() || v.is_undefined()) return dflt;
    std::int64_t x = as_i(v);
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  b = adjust(start, st < 0 ? n - 1 : 0);
  e = adjust(stop, st < 0 ? -1 : n);
}

value slice_value(const value& obj, const value& start, const value& stop, const value& step) {
  std::int64_t b, e, st;
  if (obj.is_array()) {
    const auto& a = obj.arr();
    slice_indices(start, stop, step, static_cast<std::int64_t>(a.size()), b, e, st);
    array_data out;
    for (std::int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(a[static_cast<std::size_t>(i)]);
    return value::make_array(std::move(out));
  }
  if (obj.is_string()) {
    charge_scan(obj.str().size());
    std::u32string u = py::decode(obj.str());
    slice_indices(start, stop, step, static_cast<std::int64_t>(u.size()), b, e, st);
    std::u32string out;
    for (std::int64_t i = b; st > 0 ? i < e : i > e; i += st) out += u[static_cast<std::size_t>(i)];
    return keep_markup(value(py::encode(out)), obj.is_safe());
  }
  if (obj.is_none()) return value::undefined("'NoneType' object is not subscriptable");
  throw_error("'" + obj.type_name() + "' object is not subscriptable");
}

std::vector<value> iterate(const value& v) {
  switch (v.k()) {
    case kind::undefined: return {};
    case kind::array: charge_steps(v.arr().size()); return v.arr();
    case kind::object: {
      charge_steps(v.obj().items.size());
      std::vector<value> keys;
      keys.reserve(v.obj().items.size());
      for (const auto& it : v.obj().items) keys.emplace_back(it.first);
      return keys;
    }
    case kind::string: {
      charge_scan(v.str().size());
      // One value per character: refuse before making 10^7 of them.
      ensure_room(std::uint64_t{py::length(v.str())} * sizeof(value));
      std::vector<value> chars;
      for (char32_t c : py::decode(v.str())) chars.emplace_back(py::encode(std::u32string_view(&c, 1)));
      return chars;
    }
    default: throw_error("'" + v.type_name() + "' object is not iterable");
  }
}

bool contains(const value& container, const value& item) {
  switch (container.k()) {
    case kind::undefined: return false;
    case kind::string:
      if (!item.is_string()) throw_error("'in <string>' requires string as left operand, not " + item.type_name());
      charge_scan(container.str().size());
      return container.str().find(item.str()) != std::string::npos;
    case kind::array:
      charge_steps(container.arr().size());
      for (const auto& e : container.arr())
        if (equals(e, item)) return true;
      return false;
    case kind::object:
      charge_steps(container.obj().items.size());
      return container.obj().find(item) != nullptr;
    default: throw_error("argument of type '" + container.type_name() + "' is not iterable");
  }
}

static std::string percent_format(const std::string& fmt, const value& args, bool escape);

static std::int64_t double_to_int(double d) {
  if (!(d > -9.2e18 && d < 9.2e18)) throw_error("cannot convert float to integer");
  return static_cast<std::int64_t>(d);
}

static value arith(const std::string& op, const value& a, const value& b) {
  bool fl = a.k() == kind::floating || b.k() == kind::floating;
  if (op == "/") {
    if (b.as_double() == 0) throw_error("division by zero");
    return value(a.as_double() / b.as_double());
  }
  if (fl) {
    double x = a.as_double(), y = b.as_double();
    if (op == "+") return value(x + y);
    if (op == "-") return value(x - y);
    if (op == "*") return value(x * y);
    if (op == "**") return value(std::pow(x, y));
    if (y == 0) throw_error("float division by zero");
    double fq = std::floor(x / y);
    if (op == "//") return value(fq);
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return value(m);
  }
  // Python ints are unbounded; ours are int64 and overflow is an error, never UB.
  std::int64_t x = a.as_int(), y = b.as_int(), r = 0;
  // The overflow builtin writes r; read it only after the call (argument order is unspecified).
  auto checked = [&r](bool overflow) {
    if (overflow) throw_error("integer overflow");
    return value(r);
  };
  if (op == "+") return checked(__builtin_add_overflow(x, y, &r));
  if (op == "-") return checked(__builtin_sub_overflow(x, y, &r));
  if (op == "*") return checked(__builtin_mul_overflow(x, y, &r));
  if (op == "**") {
    if (y < 0) return value(std::pow(static_cast<double>(x), static_cast<double>(y)));
    r = 1;
    for (std::int64_t i = 0; i < y; ++i) {
      if (__builtin_mul_overflow(r, x, &r)) throw_error("integer overflow");
      if (r == 0 || r == 1) break;
    }
    return value(r);
  }
  if (y == 0) throw_error("integer division or modulo by zero");
  if (x == INT64_MIN && y == -1) throw_error("integer overflow");
  std::int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  if (op == "//") return value(q);
  return value(x - q * y);
}

// Bytes of n copies of `unit` bytes, refused before anything is built when they would not
// fit the byte budget (overflow-safe: a huge n cannot wrap the product).
static void ensure_repeat_room(std::uint64_t unit, std::int64_t n) {
  if (n <= 0 || unit == 0) return;
  std::uint64_t total = 0;
  if (__builtin_mul_overflow(unit, static_cast<std::uint64_t>(n), &total)) total = UINT64_MAX;
  ensure_room(total);
}

std::string bounded_replace(std::string_view s, std::string_view from, std::string_view to, long count) {
  charge_scan(s.size());
  std::uint64_t n = from.empty() ? py::length(s) + 1 : static_cast<std::uint64_t>(py::count(s, from));
  if (count >= 0) n = std::min<std::uint64_t>(n, static_cast<std::uint64_t>(count));
  std::uint64_t added = 0;
  if (__builtin_mul_overflow(n, std::uint64_t{to.size()}, &added)) added = UINT64_MAX;
  ensure_room(added > UINT64_MAX - s.size() ? UINT64_MAX : s.size() + added);
  return py::replace(s, from, to, count);
}

value binary_op(const std::string& op, const value& a, const value& b) {
  if (a.is_number() && b.is_number()) return arith(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.is_safe() != b.is_safe()) {  // Markup + str (either side) escapes the str
        const value x = escape_value(a), y = escape_value(b);
        ensure_room(std::uint64_t{x.str().size()} + y.str().size());
        return value::markup(x.str() + y.str());
      }
      ensure_room(std::uint64_t{a.str().size()} + b.str().size());
      std::string r;
      r.reserve(a.str().size() + b.str().size());
      r.append(a.str()).append(b.str());
      return a.is_safe() ? value::markup(std::move(r)) : value(std::move(r));
    }
    if (a.is_array() && b.is_array()) {
      ensure_room((std::uint64_t{a.arr().size()} + b.arr().size()) * sizeof(value));
      array_data r = a.arr();
      r.insert(r.end(), b.arr().begin(), b.arr().end());
      return value::make_array(std::move(r));
    }
    if (a.is_string() && !a.is_safe()) throw_error("can only concatenate str (not \"" + b.type_name() + "\") to str");
  }
  if (op == "*") {
    const value& seq = a.is_number() ? b : a;
    const value& cnt = a.is_number() ? a : b;
    if (cnt.k() == kind::integer || cnt.k() == kind::boolean) {
      std::int64_t n = cnt.as_int();
      if (seq.is_string()) {
        ensure_repeat_room(seq.str().size(), n);
        std::string r;
        if (n > 0) r.reserve(seq.str().size() * static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) r += seq.str();
        return seq.is_safe() ? value::markup(std::move(r)) : value(std::move(r));
      }
      if (seq.is_array()) {
        ensure_repeat_room(seq.arr().size() * sizeof(value), n);
        charge_steps(n > 0 ? static_cast<std::uint64_t>(n) : 0);
        array_data r;
        for (std::int64_t i = 0; i < n; ++i) r.insert(r.end(), seq.arr().begin(), seq.arr().end());
        return value::make_array(std::move(r));
      }
    }
  }
  if (op == "%" && a.is_string())
    return a.is_safe() ? value::markup(percent_format(a.str(), b, true)) : value(percent_format(a.str(), b, false));
  throw_error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

// printf-style formatting as Python's str % args for %s %r %d %i %f %x %%; escape: the
// format is a Markup, whose %s/%r pieces are escaped unless they are Markups.
static std::string percent_format(const std::string& fmt, const value& args, bool escape) {
  charge_scan(fmt.size());
  std::vector<value> list = args.is_array() ? args.arr() : std::vector<value>{args};
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      ensure_room(out.size() + 1);
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) throw_error("incomplete format");
    std::string spec;
    while (i < fmt.size() && std::string("-+ #0123456789.").find(fmt[i]) != std::string::npos) spec += fmt[i++];
    if (i >= fmt.size()) throw_error("incomplete format");
    char c = fmt[i];
    if (c == '%') { out += '%'; continue; }
    if (next >= list.size()) throw_error("not enough arguments for format string");
    const value& v = list[next++];
    char buf[128];
    charge_steps();
    switch (c) {
      case 's': case 'r': {
        std::string piece = c == 's' ? v.to_str() : v.repr();
        if (escape && !(c == 's' && v.is_safe())) piece = html_escape(piece);
        ensure_room(out.size() + piece.size());
        out += piece;
        break;
      }
      case 'd': case 'i':
        std::snprintf(buf, sizeof buf, ("%" + spec + "lld").c_str(), static_cast<long long>(v.k() == kind::floating ? double_to_int(v.as_double()) : v.as_int()));
        out += buf;
        break;
      case 'f': case 'e': case 'g': case 'x': case 'X': case 'o':
        if (c == 'x' || c == 'X' || c == 'o') std::snprintf(buf, sizeof buf, ("%" + spec + "ll" + c).c_str(), static_cast<long long>(v.as_int()));
        else std::snprintf(buf, sizeof buf, ("%" + spec + c).c_str(), v.as_double());
        out += buf;
        break;
      default: throw_error(std::string("unsupported format character '") + c + "'");
    }
  }
  if (next < list.size() && args.is_array()) throw_error("not all arguments converted during string formatting");
  return out;
}

}  // namespace vks::text::jinja
