#include "catch.hpp"

#include "base/result.hpp"

namespace {
vks::result<int> parse_positive(int x) {
  if (x <= 0) return vks::fail(vks::errc::invalid_argument, "must be positive", "x");
  return x * 2;
}
vks::result<void> chain(int x) {
  VKS_TRY(parse_positive(x));
  return {};
}
}  // namespace

TEST_CASE("result carries a value or an error", "[base]") {
  auto a = parse_positive(3);
  REQUIRE(a.ok());
  CHECK(*a == 6);
  auto b = parse_positive(-1);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == vks::errc::invalid_argument);
  CHECK(b.error().param == "x");
  CHECK(vks::to_string(b.error().code) == "invalid_argument");
}

TEST_CASE("VKS_TRY propagates the error", "[base]") {
  CHECK(chain(1).ok());
  auto r = chain(0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "must be positive");
}
