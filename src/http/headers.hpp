// Header lists for requests and responses: ordered (name, value) pairs with
// case-insensitive lookup. The request parser stores names lower-cased; responses keep the
// spelling the handler chose. Plain value type; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vks::http {

// ASCII case-insensitive equality (header names and tokens are ASCII).
bool iequals(std::string_view a, std::string_view b) noexcept;

struct header {
  std::string name;
  std::string value;
};

class header_list {
 public:
  void add(std::string name, std::string value) { items_.push_back({std::move(name), std::move(value)}); }
  // Replaces every header called `name` with one `name: value`.
  void set(std::string_view name, std::string value);
  // First value whose name equals `name` case-insensitively; nullptr if absent.
  const std::string* find(std::string_view name) const noexcept;
  bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }
  // True if any comma-separated element of any `name` header equals `token` (case-insensitive).
  bool has_token(std::string_view name, std::string_view token) const noexcept;

  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  void clear() noexcept { items_.clear(); }
  auto begin() const noexcept { return items_.begin(); }
  auto end() const noexcept { return items_.end(); }
  header& back() { return items_.back(); }

 private:
  std::vector<header> items_;
};

}  // namespace vks::http
