// Typed, range-checked access to the fields of a JSON request object. A reader records
// the FIRST error (400, naming the parameter) and ignores later calls, so parsers read
// every field in sequence and check ok() once. null counts as absent (clients send null
// for unset optionals); unknown keys are never looked at (ignored, as vLLM does).
// Internal to the api layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/json.hpp"
#include "base/error.hpp"

namespace vks::api {

struct range {
  double lo, hi;
  bool lo_open = false, hi_open = false;
};

std::string format_number(double v);

class fields {
 public:
  // obj must be a JSON object (checked by the caller). prefix names nested params
  // ("stream_options.", "parameters.").
  explicit fields(const json& obj, std::string prefix = {}) : obj_(obj), prefix_(std::move(prefix)) {}

  bool ok() const noexcept { return !err_; }
  const vks::error& error() const { return *err_; }
  void fail(std::string_view key, std::string message);  // records an error (first wins)
  void fail_error(vks::error e);

  // Present and not null.
  bool has(std::string_view key) const;
  const json* get(std::string_view key) const;  // nullptr if absent or null

  // Each assigns `out` only when the key is present; wrong type or range -> error.
  void number(std::string_view key, float& out, range r);
  void number(std::string_view key, std::optional<double>& out, range r);
  void integer(std::string_view key, int& out, std::int64_t lo, std::int64_t hi);
  void integer(std::string_view key, std::optional<std::int64_t>& out, std::int64_t lo, std::int64_t hi);
  void boolean(std::string_view key, bool& out);
  void boolean(std::string_view key, std::optional<bool>& out);
  void string(std::string_view key, std::string& out);
  void string(std::string_view key, std::optional<std::string>& out);
  // string or array of strings (e.g. `stop`); each non-empty; at most max_items.
  void string_list(std::string_view key, std::vector<std::string>& out, std::size_t max_items);
  void int_list(std::string_view key, std::vector<std::int32_t>& out, std::int64_t lo, std::int64_t hi);
  // Object-valued field (json object), copied.
  void object(std::string_view key, std::optional<json>& out);

  std::string name(std::string_view key) const { return prefix_ + std::string(key); }

 private:
  const json& obj_;
  std::string prefix_;
  std::optional<vks::error> err_;
};

// Integral value of a JSON number (5 and 5.0 both qualify), if it is one.
std::optional<std::int64_t> as_integer(const json& v);

}  // namespace vks::api
