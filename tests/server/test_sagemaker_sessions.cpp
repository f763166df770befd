// session_registry: ids in the contract's grammar, Expires header, fixed TTL, the cap,
// close, and every closed or expired session's key handed to the release callback.
#include "catch.hpp"

#include <regex>
#include <vector>

#include "server/sagemaker_sessions.hpp"

using vks::server::session_limits;
using vks::server::session_registry;
using namespace std::chrono_literals;

TEST_CASE("sessions: create, find, close; the key is released once", "[server][sessions]") {
  std::vector<std::uint64_t> released;
  session_registry reg(session_limits{60s, 8}, [&](std::uint64_t k) { released.push_back(k); });
  const auto t0 = session_registry::clock::now();
  auto a = reg.create(t0);
  REQUIRE(a.ok());
  CHECK(session_registry::valid_id(a->id));
  CHECK(std::regex_match(a->header, std::regex(R"(^[a-zA-Z0-9](-*[a-zA-Z0-9])*; Expires=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$)")));
  CHECK(a->header.rfind(a->id + "; ", 0) == 0);
  auto b = reg.create(t0);
  REQUIRE(b.ok());
  CHECK(a->id != b->id);
  CHECK(a->key != b->key);
  CHECK(a->key != 0);
  auto k = reg.find(a->id, t0 + 1s);
  REQUIRE(k.ok());
  CHECK(*k == a->key);
  auto missing = reg.find("nope", t0);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == "session not found: nope");
  REQUIRE(reg.close(a->id, t0).ok());
  CHECK(released == std::vector<std::uint64_t>{a->key});
  CHECK_FALSE(reg.find(a->id, t0).ok());
  CHECK_FALSE(reg.close(a->id, t0).ok());
  CHECK(released.size() == 1);
  CHECK(reg.size() == 1);
}

TEST_CASE("sessions: expiry is fixed from creation and releases the key", "[server][sessions]") {
  std::vector<std::uint64_t> released;
  session_registry reg(session_limits{10s, 8}, [&](std::uint64_t k) { released.push_back(k); });
  const auto t0 = session_registry::clock::now();
  auto a = reg.create(t0);
  auto b = reg.create(t0 + 5s);
  REQUIRE((a.ok() && b.ok()));
  CHECK(reg.find(a->id, t0 + 9s).ok());
  CHECK_FALSE(reg.find(a->id, t0 + 10s).ok());  // used or not, it ends at creation + TTL
  CHECK(released == std::vector<std::uint64_t>{a->key});
  CHECK(reg.sweep(t0 + 14s) == 0);
  CHECK(reg.sweep(t0 + 15s) == 1);
  CHECK(released.size() == 2);
  CHECK(reg.size() == 0);
}

TEST_CASE("sessions: the cap refuses new sessions until one closes or expires", "[server][sessions]") {
  session_registry reg(session_limits{10s, 2}, nullptr);
  const auto t0 = session_registry::clock::now();
  auto a = reg.create(t0);
  REQUIRE(reg.create(t0 + 1s).ok());
  auto c = reg.create(t0 + 2s);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("too many open sessions") != std::string::npos);
  REQUIRE(reg.close(a->id, t0 + 2s).ok());
  CHECK(reg.create(t0 + 2s).ok());
  CHECK_FALSE(reg.create(t0 + 3s).ok());
  CHECK(reg.create(t0 + 11s).ok());  // the second expired: its slot is free
}

TEST_CASE("sessions: the id grammar of the contract", "[server][sessions]") {
  CHECK(session_registry::valid_id("a"));
  CHECK(session_registry::valid_id("0f8e-12--ab"));
  CHECK_FALSE(session_registry::valid_id(""));
  CHECK_FALSE(session_registry::valid_id("-ab"));
  CHECK_FALSE(session_registry::valid_id("ab-"));
  CHECK_FALSE(session_registry::valid_id("a_b"));
  CHECK_FALSE(session_registry::valid_id(std::string(257, 'a')));
  CHECK(session_registry::valid_id(std::string(256, 'a')));
}
