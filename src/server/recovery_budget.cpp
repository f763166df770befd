// The recovery budget across re-execs (see recovery_budget.hpp).
#include "server/recovery_budget.hpp"

#include <charconv>
#include <vector>

namespace vks::server {

recovery_decision decide_recovery(std::string_view previous, std::int64_t now, std::int64_t window_s, int max) {
  std::vector<std::int64_t> recent;
  while (!previous.empty()) {
    const auto comma = previous.find(',');
    const std::string_view item = previous.substr(0, comma);
    std::int64_t t = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), t);
    if (ec == std::errc() && p == item.data() + item.size() && t <= now && now - t < window_s && recent.size() < 1024)
      recent.push_back(t);
    if (comma == std::string_view::npos) break;
    previous.remove_prefix(comma + 1);
  }
  recovery_decision d;
  d.allowed = max > 0 && static_cast<int>(recent.size()) < max;
  if (d.allowed) recent.push_back(now);
  d.n_recent = static_cast<int>(recent.size());
  for (std::size_t i = 0; i < recent.size(); ++i) d.env += (i ? "," : "") + std::to_string(recent[i]);
  return d;
}

}  // namespace vks::server
