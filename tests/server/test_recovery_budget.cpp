// decide_recovery: at most N recoveries in a sliding window, counted across re-execs.
#include "catch.hpp"

#include "server/recovery_budget.hpp"

using vks::server::decide_recovery;

TEST_CASE("recovery budget: N recoveries per window, then exit", "[server][recovery]") {
  auto d1 = decide_recovery("", 1000, 600, 2);
  CHECK(d1.allowed);
  CHECK(d1.n_recent == 1);
  CHECK(d1.env == "1000");
  auto d2 = decide_recovery(d1.env, 1100, 600, 2);
  CHECK(d2.allowed);
  CHECK(d2.env == "1000,1100");
  auto d3 = decide_recovery(d2.env, 1200, 600, 2);
  CHECK_FALSE(d3.allowed);
  CHECK(d3.n_recent == 2);
  // The first one leaves the window: room again.
  auto d4 = decide_recovery(d2.env, 1600, 600, 2);
  CHECK(d4.allowed);
  CHECK(d4.env == "1100,1600");
}

TEST_CASE("recovery budget: max 0 never recovers; junk and future entries are ignored", "[server][recovery]") {
  CHECK_FALSE(decide_recovery("", 1000, 600, 0).allowed);
  auto d = decide_recovery("abc,,12x,5000,-1,990", 1000, 600, 2);
  CHECK(d.allowed);
  CHECK(d.env == "990,1000");
}
