// The Responses API store: count and byte caps with least-recently-used eviction (a read
// counts as a use), time to live, replace and erase, an entry over the byte cap refused.
#include "catch.hpp"

#include <string>

#include "server/response_store.hpp"

using namespace vks;
using namespace vks::server;

namespace {

response_store::entry entry_of(std::size_t n) {
  return {api::json{{"text", std::string(n, 'x')}}, api::json::array()};
}

}  // namespace

TEST_CASE("response_store: count cap evicts the least recently used") {
  response_store s({3, 1u << 20, std::chrono::seconds(60)});
  for (const char* id : {"a", "b", "c"}) REQUIRE(s.put(id, entry_of(10)));
  REQUIRE(s.get("a"));  // a is now the most recent
  REQUIRE(s.put("d", entry_of(10)));
  CHECK(s.size() == 3);
  CHECK_FALSE(s.get("b"));
  CHECK(s.get("a"));
  CHECK(s.get("c"));
  CHECK(s.get("d"));
}

TEST_CASE("response_store: byte cap, replace, erase, oversize") {
  response_store s({100, 300, std::chrono::seconds(60)});
  REQUIRE(s.put("a", entry_of(100)));
  REQUIRE(s.put("b", entry_of(100)));
  const std::size_t two = s.bytes();
  REQUIRE(s.put("c", entry_of(100)));  // three do not fit: a goes
  CHECK_FALSE(s.get("a"));
  CHECK(s.bytes() <= 300);
  REQUIRE(s.put("b", entry_of(10)));  // replaced, smaller
  CHECK(s.bytes() < two);
  CHECK(s.get("b")->response["text"].get<std::string>().size() == 10);
  CHECK_FALSE(s.put("big", entry_of(1000)));
  CHECK_FALSE(s.get("big"));
  CHECK(s.erase("b"));
  CHECK_FALSE(s.erase("b"));
  CHECK(s.size() == 1);
}

TEST_CASE("response_store: entries expire") {
  response_store s({10, 1u << 20, std::chrono::seconds(5)});
  const auto t0 = response_store::clock::now();
  REQUIRE(s.put("a", entry_of(1), t0));
  CHECK(s.get("a", t0 + std::chrono::seconds(4)));
  CHECK_FALSE(s.get("a", t0 + std::chrono::seconds(6)));
  CHECK(s.size() == 0);
  response_store off({0, 1u << 20, std::chrono::seconds(5)});
  CHECK_FALSE(off.put("a", entry_of(1)));
}
