// Error mapping: status codes, OpenAI error objects, vLLM wording; body decoding and the
// /invocations dispatch rule.
#include "catch.hpp"

#include "api/errors.hpp"
#include "api/invocations.hpp"

using namespace vks;
using namespace vks::api;

TEST_CASE("errc maps to HTTP status and error type") {
  CHECK(http_status(errc::invalid_argument) == 400);
  CHECK(http_status(errc::context_overflow) == 400);
  CHECK(http_status(errc::not_found) == 404);
  CHECK(http_status(errc::overloaded) == 429);
  CHECK(http_status(errc::shutting_down) == 503);
  CHECK(http_status(errc::device_lost) == 503);
  CHECK(http_status(errc::unsupported) == 501);
  CHECK(http_status(errc::internal) == 500);
  CHECK(error_type(400) == "BadRequestError");
  CHECK(error_type(404) == "NotFoundError");
  CHECK(error_type(429) == "RateLimitError");
  CHECK(error_type(503) == "ServiceUnavailableError");
  CHECK(error_type(500) == "InternalServerError");
}

TEST_CASE("one status -> error type table for the API and the HTTP server") {
  // http/errors and api/errors both use this table (base/error_type); the two old
  // copies disagreed on 413 (RequestEntityTooLargeError here): the Stainless SDK name wins.
  CHECK(error_type(413) == "RequestTooLargeError");
  CHECK(error_type(504) == "TimeoutError");
  CHECK(error_type(415) == "UnsupportedMediaTypeError");
  CHECK(error_type(431) == "RequestHeaderFieldsTooLargeError");
  CHECK(error_type(502) == "InternalServerError");
  CHECK(error_type(418) == "BadRequestError");
}

TEST_CASE("error bodies are OpenAI error objects with the status as code") {
  CHECK(error_body(make_error(errc::invalid_argument, "temperature must be in [0, 2], got 3.", "temperature")) ==
        R"({"error":{"message":"temperature must be in [0, 2], got 3.","type":"BadRequestError","param":"temperature","code":400}})");
  CHECK(error_body(model_not_found("gpt-4")) ==
        R"({"error":{"message":"The model `gpt-4` does not exist.","type":"NotFoundError","param":"model","code":404}})");
  CHECK(error_body(make_error(errc::overloaded, "busy")) ==
        R"({"error":{"message":"busy","type":"RateLimitError","param":null,"code":429}})");
}

TEST_CASE("bodies: invalid UTF-8 and malformed JSON are 400") {
  auto r = parse_json_body("{\"a\": \"\xC3\x28\"}");
  REQUIRE(!r.ok());
  CHECK(http_status(r.error().code) == 400);
  CHECK(r.error().message.find("UTF-8") != std::string::npos);
  auto r2 = parse_json_body("{\"a\": ");
  REQUIRE(!r2.ok());
  CHECK(r2.error().message.rfind("JSON decode error", 0) == 0);
  CHECK(!parse_json_body("").ok());
  CHECK(!parse_json_body(R"({"a":"\ud800"})").ok());  // lone surrogate
  CHECK(parse_json_body(R"({"a":"\u00e9"})").ok());
}

TEST_CASE("content type: application/json with parameters, or none") {
  CHECK(check_json_content_type("application/json").ok());
  CHECK(check_json_content_type("Application/JSON; charset=utf-8").ok());
  CHECK(check_json_content_type("").ok());
  auto r = check_json_content_type("text/plain");
  REQUIRE(!r.ok());
  CHECK(http_status(r.error().code) == 400);
}

TEST_CASE("/invocations dispatch: messages, then prompt, then inputs") {
  auto kind = [](const char* body) { return classify_invocation(json::parse(body)); };
  CHECK(*kind(R"({"messages":[],"prompt":"x"})") == invocation_kind::chat);
  CHECK(*kind(R"({"prompt":"x"})") == invocation_kind::completion);
  CHECK(*kind(R"({"inputs":"x","parameters":{}})") == invocation_kind::lmi);
  auto none = kind(R"({"text":"x"})");
  REQUIRE(!none.ok());
  CHECK(http_status(none.error().code) == 400);
  CHECK(!kind("[1]").ok());
}
