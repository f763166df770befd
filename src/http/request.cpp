// Request helpers: method names and target splitting (see request.hpp).
#include "http/request.hpp"

#include <array>

namespace vks::http {

namespace {
constexpr std::array<std::string_view, 8> k_method_names = {"GET", "HEAD", "POST", "PUT", "DELETE",
                                                            "OPTIONS", "PATCH", "OTHER"};
}

std::string_view to_string(method m) noexcept { return k_method_names[static_cast<std::size_t>(m)]; }

method method_from_string(std::string_view s) noexcept {
  for (std::size_t i = 0; i + 1 < k_method_names.size(); ++i)
    if (k_method_names[i] == s) return static_cast<method>(i);
  return method::other;
}

std::string_view request::path() const noexcept {
  std::string_view t = target;
  return t.substr(0, t.find('?'));
}

std::string_view request::query() const noexcept {
  std::string_view t = target;
  auto q = t.find('?');
  return q == std::string_view::npos ? std::string_view{} : t.substr(q + 1);
}

std::string_view request::param(std::string_view name) const noexcept {
  for (const auto& [k, v] : params)
    if (k == name) return v;
  return {};
}

}  // namespace vks::http
