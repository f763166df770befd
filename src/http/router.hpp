// router: method + path pattern -> handler. Handlers are coroutines that answer through a
// response_writer; the router answers unknown paths with 404 and known paths with the wrong
// method with 405 + `Allow`, both as OpenAI-shaped JSON errors. Built at start-up, then
// read-only: one router may be shared by every I/O thread (handlers must be thread-safe
// if they touch shared state).
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "http/request.hpp"
#include "http/route_table.hpp"
#include "http/writer.hpp"
#include "rt/task.hpp"

namespace vks::http {

// A handler must answer through `w` (send, or begin/write/end). If it returns without
// answering, the connection sends 500; if it throws before answering, 500 too.
using handler = std::function<rt::task<void>(request& req, response_writer& w)>;

class router {
 public:
  void add(method m, std::string_view pattern, handler h);
  void get(std::string_view pattern, handler h) { add(method::get, pattern, std::move(h)); }
  void post(std::string_view pattern, handler h) { add(method::post, pattern, std::move(h)); }

  // Matches req (filling req.params) and returns the handler, or nullptr and an error
  // response (404 / 405) in `error`.
  const handler* find(request& req, response& error) const;
  // Whether a route exists for req's method and path (used before `100 Continue`).
  bool has_route(const request& req) const;

 private:
  route_table table_;
  std::vector<handler> handlers_;
};

}  // namespace vks::http
