// Comma-separated lists, written once: the option values of --api-key and --allowed-origins
// and the Sec-WebSocket-Protocol header. Entries are trimmed of spaces and tabs; empty
// entries are skipped. Header-only, allocation-free, any thread.
#pragma once

#include <string_view>

namespace vks::server {

// `s` without leading and trailing spaces and tabs.
constexpr std::string_view trim_blanks(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls match(entry) for each non-empty entry of `list`, in order, until one returns true;
// returns whether one did.
template <class F>
bool any_list_entry(std::string_view list, F&& match) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    if (const std::string_view e = trim_blanks(list.substr(0, comma)); !e.empty() && match(e)) return true;
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}

}  // namespace vks::server
