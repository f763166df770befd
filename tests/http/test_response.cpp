// Response serialization, error bodies and route matching.
#include "catch.hpp"

#include <nlohmann/json.hpp>

#include "http/errors.hpp"
#include "http/response.hpp"
#include "http/route_table.hpp"

using namespace vks::http;

namespace {
std::string header_block(const std::string& s) { return s.substr(0, s.find("\r\n\r\n") + 4); }
}  // namespace

TEST_CASE("response: status line, headers, Content-Length, body", "[http][response]") {
  auto r = response::json(200, R"({"a":1})");
  std::string out;
  serialize(r, {}, out);
  CHECK(out.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(out.find("Content-Type: application/json\r\n") != std::string::npos);
  CHECK(out.find("Content-Length: 7\r\n") != std::string::npos);
  CHECK(out.find("Date: ") != std::string::npos);
  CHECK(out.find("Connection:") == std::string::npos);
  CHECK(out.substr(out.size() - 7) == R"({"a":1})");
}

TEST_CASE("response: HEAD omits the body but keeps Content-Length", "[http][response]") {
  auto r = response::text(200, "hello");
  std::string out;
  serialize(r, {.head = true}, out);
  CHECK(out.find("Content-Length: 5\r\n") != std::string::npos);
  CHECK(out == header_block(out));
}

TEST_CASE("response: connection framing", "[http][response]") {
  std::string out;
  serialize(response{204, {}, ""}, {.keep_alive = false}, out);
  CHECK(out.find("Connection: close\r\n") != std::string::npos);
  CHECK(out.find("Content-Length") == std::string::npos);
  out.clear();
  serialize(response{200, {}, ""}, {.keep_alive = true, .version_minor = 0}, out);
  CHECK(out.rfind("HTTP/1.0 200 OK", 0) == 0);
  CHECK(out.find("Connection: keep-alive\r\n") != std::string::npos);
}

TEST_CASE("errors: OpenAI shape with integer code", "[http][errors]") {
  for (int status : {400, 404, 405, 408, 413, 431, 500, 503}) {
    auto r = error_response(status, "boom \xff bytes");
    CHECK(r.status == status);
    auto j = nlohmann::json::parse(r.body);
    REQUIRE(j.contains("error"));
    auto& e = j["error"];
    CHECK(e["message"].is_string());
    CHECK(e["type"] == std::string(error_type(status)));
    CHECK(e["param"].is_null());
    CHECK(e["code"] == status);
    CHECK(*r.headers.find("content-type") == "application/json");
  }
  auto j = nlohmann::json::parse(error_json(400, "bad", "temperature"));
  CHECK(j["error"]["param"] == "temperature");
  CHECK(error_type(404) == "NotFoundError");
  CHECK(error_type(400) == "BadRequestError");
}

TEST_CASE("route_table: exact, params, 404, 405 with Allow", "[http][router]") {
  route_table t;
  auto health = t.add(method::get, "/health");
  auto ping_get = t.add(method::get, "/ping");
  auto ping_post = t.add(method::post, "/ping");
  auto model = t.add(method::get, "/v1/models/{id}");
  auto models = t.add(method::get, "/v1/models");
  auto files = t.add(method::get, "/files/{path...}");
  auto special = t.add(method::get, "/v1/models/special");

  auto m = t.match(method::get, "/health");
  CHECK(m.kind == match_kind::found);
  CHECK(m.index == health);
  CHECK(t.match(method::post, "/ping").index == ping_post);
  CHECK(t.match(method::get, "/ping").index == ping_get);
  CHECK(t.match(method::head, "/health").kind == match_kind::found);  // HEAD -> GET route

  m = t.match(method::get, "/v1/models/stories260K");
  REQUIRE(m.kind == match_kind::found);
  CHECK(m.index == model);
  REQUIRE(m.params.size() == 1);
  CHECK(m.params[0] == std::pair<std::string, std::string>{"id", "stories260K"});
  CHECK(t.match(method::get, "/v1/models/special").index == special);
  CHECK(t.match(method::get, "/v1/models").index == models);
  m = t.match(method::get, "/files/a/b/c");
  CHECK(m.index == files);
  CHECK(m.params[0].second == "a/b/c");

  CHECK(t.match(method::get, "/nope").kind == match_kind::not_found);
  CHECK(t.match(method::get, "/v1/models/").kind == match_kind::not_found);
  CHECK(t.match(method::get, "/health/").kind == match_kind::not_found);
  CHECK(t.match(method::get, "").kind == match_kind::not_found);

  m = t.match(method::del, "/health");
  CHECK(m.kind == match_kind::method_not_allowed);
  CHECK(m.allow == "GET, HEAD");
  m = t.match(method::put, "/ping");
  CHECK(m.allow == "GET, POST, HEAD");
  CHECK(t.match(method::other, "/ping").kind == match_kind::method_not_allowed);

  // An exact HEAD route beats the GET fallback, though registered after it.
  auto ping_head = t.add(method::head, "/ping");
  CHECK(t.match(method::head, "/ping").index == ping_head);
  CHECK(t.match(method::get, "/ping").index == ping_get);
  CHECK(t.match(method::head, "/health").index == health);
  CHECK(t.match(method::put, "/ping").allow == "GET, POST, HEAD");
}
