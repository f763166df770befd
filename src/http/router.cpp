// router (see router.hpp).
#include "http/router.hpp"

#include <string>

#include "http/errors.hpp"

namespace vks::http {

void router::add(method m, std::string_view pattern, handler h) {
  table_.add(m, pattern);
  handlers_.push_back(std::move(h));
}

const handler* router::find(request& req, response& error) const {
  auto m = table_.match(req.method, req.path());
  switch (m.kind) {
    case match_kind::found:
      req.params = std::move(m.params);
      return &handlers_[m.index];
    case match_kind::method_not_allowed:
      error = error_response(405, "method " + req.method_name + " is not allowed for " + std::string(req.path()));
      error.headers.add("Allow", std::move(m.allow));
      return nullptr;
    case match_kind::not_found:
      break;
  }
  error = error_response(404, "no route for " + std::string(req.path()));
  return nullptr;
}

bool router::has_route(const request& req) const {
  return table_.match(req.method, req.path()).kind == match_kind::found;
}

}  // namespace vks::http
