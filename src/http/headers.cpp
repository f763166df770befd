// Case-insensitive header lookup (see headers.hpp).
#include "http/headers.hpp"

namespace vks::http {

namespace {
char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
}  // namespace

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

void header_list::set(std::string_view name, std::string value) {
  std::erase_if(items_, [&](const header& h) { return iequals(h.name, name); });
  items_.push_back({std::string(name), std::move(value)});
}

const std::string* header_list::find(std::string_view name) const noexcept {
  for (const auto& h : items_)
    if (iequals(h.name, name)) return &h.value;
  return nullptr;
}

bool header_list::has_token(std::string_view name, std::string_view token) const noexcept {
  for (const auto& h : items_) {
    if (!iequals(h.name, name)) continue;
    std::string_view rest = h.value;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      if (iequals(trim(rest.substr(0, comma)), token)) return true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

}  // namespace vks::http
