// Test helpers for rt: a loop for the backend named by VKS_RT_BACKEND (the executable skips
// whole, before any test, when that backend is unavailable here), and a runner for a
// coroutine body on it.
#pragma once

#include "catch.hpp"
#include "precondition.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "rt/loop.hpp"
#include "rt/task.hpp"

namespace vks::rt::test {

inline const bool needs_loop = vks::test_main::require("", [] {
  auto lp = loop::create();
  if (lp) return std::string();
  const char* be = std::getenv("VKS_RT_BACKEND");
  return std::string("cannot create the ") + (be ? be : "default") + " loop here: " + lp.error().message;
});

// The precondition held, so a loop that cannot be made now is a failure.
inline std::unique_ptr<loop> make_loop(loop_options opts = {}) {
  auto lp = loop::create(opts);
  REQUIRE(lp.ok());
  return std::move(*lp);
}

// Runs a coroutine lambda whose closure must outlive the call: the closure (and args) are
// moved into this coroutine's frame, so `s.spawn(own([&]() -> task<void> {...}))` is safe
// where `s.spawn([&]() -> task<void> {...}())` would leave the child a dangling closure.
template <class F, class... A>
task<void> own(F f, A... args) {
  co_await f(args...);
}

}  // namespace vks::rt::test
