// JSON field reader (fields.hpp).
#include "api/fields.hpp"

#include <cmath>
#include <cstdio>

namespace vks::api {

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

namespace {

std::string describe(const range& r) {
  return std::string(r.lo_open ? "(" : "[") + format_number(r.lo) + ", " + format_number(r.hi) +
         (r.hi_open ? ")" : "]");
}

bool in_range(double v, const range& r) {
  if (!std::isfinite(v)) return false;
  if (r.lo_open ? v <= r.lo : v < r.lo) return false;
  if (r.hi_open ? v >= r.hi : v > r.hi) return false;
  return true;
}

const char* type_name(const json& v) {
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

}  // namespace

std::optional<std::int64_t> as_integer(const json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      return std::nullopt;
    return v.get<std::int64_t>();
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

void fields::fail(std::string_view key, std::string message) {
  if (!err_) err_ = make_error(errc::invalid_argument, std::move(message), name(key));
}

void fields::fail_error(vks::error e) {
  if (!err_) err_ = std::move(e);
}

const json* fields::get(std::string_view key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool fields::has(std::string_view key) const { return get(key) != nullptr; }

void fields::number(std::string_view key, std::optional<double>& out, range r) {
  const json* v = get(key);
  if (!v || err_) return;
  if (!v->is_number()) return fail(key, name(key) + " must be a number, got " + type_name(*v) + ".");
  double d = v->get<double>();
  if (!in_range(d, r))
    return fail(key, name(key) + " must be in " + describe(r) + ", got " + format_number(d) + ".");
  out = d;
}

void fields::number(std::string_view key, float& out, range r) {
  std::optional<double> d;
  number(key, d, r);
  if (d) out = static_cast<float>(*d);
}

void fields::integer(std::string_view key, std::optional<std::int64_t>& out, std::int64_t lo, std::int64_t hi) {
  const json* v = get(key);
  if (!v || err_) return;
  auto i = v->is_boolean() ? std::nullopt : as_integer(*v);
  if (!i) return fail(key, name(key) + " must be an integer, got " + (v->is_number() ? std::string("a fraction") : type_name(*v)) + ".");
  if (*i < lo || *i > hi)
    return fail(key, name(key) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                         std::to_string(*i) + ".");
  out = *i;
}

void fields::integer(std::string_view key, int& out, std::int64_t lo, std::int64_t hi) {
  std::optional<std::int64_t> i;
  integer(key, i, lo, hi);
  if (i) out = static_cast<int>(*i);
}

void fields::boolean(std::string_view key, std::optional<bool>& out) {
  const json* v = get(key);
  if (!v || err_) return;
  if (!v->is_boolean()) return fail(key, name(key) + " must be a boolean, got " + type_name(*v) + ".");
  out = v->get<bool>();
}

void fields::boolean(std::string_view key, bool& out) {
  std::optional<bool> b;
  boolean(key, b);
  if (b) out = *b;
}

void fields::string(std::string_view key, std::optional<std::string>& out) {
  const json* v = get(key);
  if (!v || err_) return;
  if (!v->is_string()) return fail(key, name(key) + " must be a string, got " + type_name(*v) + ".");
  out = v->get<std::string>();
}

void fields::string(std::string_view key, std::string& out) {
  std::optional<std::string> s;
  string(key, s);
  if (s) out = std::move(*s);
}

void fields::string_list(std::string_view key, std::vector<std::string>& out, std::size_t max_items) {
  const json* v = get(key);
  if (!v || err_) return;
  std::vector<std::string> items;
  if (v->is_string()) {
    items.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const auto& e : *v) {
      if (!e.is_string()) return fail(key, name(key) + " must be a string or a list of strings.");
      items.push_back(e.get<std::string>());
    }
  } else {
    return fail(key, name(key) + " must be a string or a list of strings, got " + type_name(*v) + ".");
  }
  if (items.size() > max_items)
    return fail(key, name(key) + " may hold at most " + std::to_string(max_items) + " strings, got " +
                         std::to_string(items.size()) + ".");
  for (const auto& s : items)
    if (s.empty()) return fail(key, name(key) + " must not contain empty strings.");
  out = std::move(items);
}

void fields::int_list(std::string_view key, std::vector<std::int32_t>& out, std::int64_t lo, std::int64_t hi) {
  const json* v = get(key);
  if (!v || err_) return;
  if (!v->is_array()) return fail(key, name(key) + " must be a list of integers, got " + type_name(*v) + ".");
  std::vector<std::int32_t> items;
  for (const auto& e : *v) {
    auto i = e.is_boolean() ? std::nullopt : as_integer(e);
    if (!i) return fail(key, name(key) + " must be a list of integers.");
    if (*i < lo || *i > hi)
      return fail(key, name(key) + " items must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           "], got " + std::to_string(*i) + ".");
    items.push_back(static_cast<std::int32_t>(*i));
  }
  out = std::move(items);
}

void fields::object(std::string_view key, std::optional<json>& out) {
  const json* v = get(key);
  if (!v || err_) return;
  if (!v->is_object()) return fail(key, name(key) + " must be an object, got " + type_name(*v) + ".");
  out = *v;
}

}  // namespace vks::api
