// resolve_max_tokens: defaults, limits and the context-overflow message.
#include "catch.hpp"

#include "engine/request.hpp"

using namespace vks::engine;

TEST_CASE("resolve_max_tokens fills the rest of the context") {
  auto r = resolve_max_tokens(10, -1, 100);
  REQUIRE(r.ok());
  CHECK(*r == 90);
  auto r2 = resolve_max_tokens(10, 90, 100);
  REQUIRE(r2.ok());
  CHECK(*r2 == 90);
}

TEST_CASE("resolve_max_tokens reports overflow naming both counts") {
  auto r = resolve_max_tokens(10, 91, 100);
  REQUIRE(!r.ok());
  CHECK(r.error().code == vks::errc::context_overflow);
  CHECK(r.error().message.find("100") != std::string::npos);
  CHECK(r.error().message.find("101") != std::string::npos);
  CHECK(r.error().message.find("10 in the messages") != std::string::npos);
  auto r2 = resolve_max_tokens(100, -1, 100);
  REQUIRE(!r2.ok());
  CHECK(r2.error().message.find("100 input tokens") != std::string::npos);
}

TEST_CASE("finish_reason names") {
  CHECK(std::string(to_string(finish_reason::stop)) == "stop");
  CHECK(std::string(to_string(finish_reason::length)) == "length");
  CHECK(std::string(to_string(finish_reason::abort)) == "abort");
}
