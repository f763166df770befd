// Route matching without handlers: patterns like "/v1/models/{id}" (a `{name}` segment
// matches one non-empty path segment and is captured) or a trailing "{name...}" segment
// that captures the rest of the path. match() distinguishes an unknown path (404) from a
// known path with the wrong method (405, with the `Allow` value). Exact segments win over
// parameters. Built once at start-up, then read-only (safe to share between threads).
// Routes without parameters are also indexed by their exact path: such a route beats every
// parameter route on its path, so a request for it is answered by one lookup.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/request.hpp"

namespace vks::http {

enum class match_kind { found, not_found, method_not_allowed };

struct route_match {
  match_kind kind = match_kind::not_found;
  std::size_t index = 0;   // route index (found)
  std::string allow;       // e.g. "GET, HEAD, POST" (method_not_allowed)
  std::vector<std::pair<std::string, std::string>> params;
};

class route_table {
 public:
  // Adds a route; returns its index. HEAD requests match GET routes unless a HEAD route
  // exists. `pattern` must start with '/'.
  std::size_t add(method m, std::string_view pattern);
  route_match match(method m, std::string_view path) const;
  std::size_t size() const noexcept { return routes_.size(); }

 private:
  struct segment {
    std::string text;
    bool param = false;
    bool rest = false;  // "{name...}": captures the remaining path
  };
  struct route {
    method m;
    std::vector<segment> segments;
  };
  static bool match_path(const route& r, std::string_view path,
                         std::vector<std::pair<std::string, std::string>>& params, int& score);
  static bool method_fits(method route_m, method m) noexcept;
  std::vector<route> routes_;
  std::map<std::string, std::vector<std::size_t>, std::less<>> exact_;  // path -> parameterless routes
};

}  // namespace vks::http
