// Path pattern matching (see route_table.hpp). Paths are compared segment by segment; no
// percent-decoding is done (handlers decode parameters if they need to).
#include "http/route_table.hpp"

#include "base/assert.hpp"

namespace vks::http {

namespace {
std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (true) {
    auto slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}
}  // namespace

std::size_t route_table::add(method m, std::string_view pattern) {
  VKS_ASSERT(!pattern.empty() && pattern.front() == '/', "route pattern must start with '/'");
  route r{m, {}};
  for (auto part : split_path(pattern)) {
    segment s;
    if (part.size() >= 2 && part.front() == '{' && part.back() == '}') {
      part = part.substr(1, part.size() - 2);
      s.param = true;
      if (part.size() > 3 && part.substr(part.size() - 3) == "...") {
        s.rest = true;
        part.remove_suffix(3);
      }
    }
    s.text = std::string(part);
    r.segments.push_back(std::move(s));
  }
  bool exact = true;
  for (const auto& s : r.segments) exact = exact && !s.param;
  if (exact) exact_[std::string(pattern)].push_back(routes_.size());
  routes_.push_back(std::move(r));
  return routes_.size() - 1;
}

bool route_table::method_fits(method route_m, method m) noexcept {
  return (route_m == m && m != method::other) || (m == method::head && route_m == method::get);
}

// score: number of literal segments matched (more literals = more specific).
bool route_table::match_path(const route& r, std::string_view path,
                             std::vector<std::pair<std::string, std::string>>& params, int& score) {
  if (path.empty() || path.front() != '/') return false;
  std::string_view rest = path.substr(1);
  params.clear();
  score = 0;
  for (std::size_t i = 0; i < r.segments.size(); ++i) {
    const auto& s = r.segments[i];
    if (s.rest) {
      if (rest.empty()) return false;
      params.emplace_back(s.text, std::string(rest));
      return true;
    }
    auto slash = rest.find('/');
    bool last_in_path = slash == std::string_view::npos;
    std::string_view part = rest.substr(0, slash);
    if (s.param) {
      if (part.empty()) return false;
      params.emplace_back(s.text, std::string(part));
    } else {
      if (part != s.text) return false;
      ++score;
    }
    bool last_in_pattern = i + 1 == r.segments.size();
    if (last_in_pattern != last_in_path) return false;
    if (!last_in_path) rest.remove_prefix(slash + 1);
  }
  return true;
}

// The exact-path index first (an exact HEAD route beats the GET fallback); then every
// route. Only a path with no route for the method (405 or 404) pays for collecting the
// Allow list.
route_match route_table::match(method m, std::string_view path) const {
  route_match best;
  if (auto it = exact_.find(path); it != exact_.end()) {
    for (std::size_t i : it->second) {
      if (!method_fits(routes_[i].m, m)) continue;
      const bool better = best.kind != match_kind::found || (routes_[best.index].m != m && routes_[i].m == m);
      if (!better) continue;  // as below: the first route of the best rank wins
      best.kind = match_kind::found;
      best.index = i;
    }
    if (best.kind == match_kind::found) return best;
  }
  int best_score = -1;
  std::vector<std::pair<std::string, std::string>> params;
  for (std::size_t i = 0; i < routes_.size(); ++i) {
    const auto& r = routes_[i];
    if (!method_fits(r.m, m)) continue;
    int score = 0;
    if (!match_path(r, path, params, score)) continue;
    // An exact HEAD route beats the GET fallback at the same specificity.
    int rank = score * 2 + (r.m == m ? 1 : 0);
    if (rank > best_score) {
      best_score = rank;
      best.kind = match_kind::found;
      best.index = i;
      best.params = params;
    }
  }
  if (best.kind == match_kind::found) return best;
  std::vector<std::string> allowed;
  bool have_head = false;
  for (const auto& r : routes_) {
    int score = 0;
    if (!match_path(r, path, params, score)) continue;
    auto name = std::string(to_string(r.m));
    bool dup = false;
    for (const auto& a : allowed) dup = dup || a == name;
    if (!dup) allowed.push_back(name);
    have_head = have_head || r.m == method::head;
  }
  if (allowed.empty()) return best;  // not_found
  bool has_get = false;
  for (const auto& a : allowed) has_get = has_get || a == "GET";
  if (has_get && !have_head) allowed.emplace_back("HEAD");
  best.kind = match_kind::method_not_allowed;
  for (const auto& a : allowed) {
    if (!best.allow.empty()) best.allow += ", ";
    best.allow += a;
  }
  return best;
}

}  // namespace vks::http
