// Test helpers for rt: a loop for the backend named by VKS_RT_BACKEND (exit 77 when that
// backend is unavailable here), and a runner for a coroutine body on it.
#pragma once

#include "catch.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "rt/loop.hpp"
#include "rt/task.hpp"

namespace vks::rt::test {

inline std::unique_ptr<loop> make_loop(loop_options opts = {}) {
  auto lp = loop::create(opts);
  if (!lp) {
    std::fprintf(stderr, "SKIP: cannot create the %s loop here: %s\n",
                 std::getenv("VKS_RT_BACKEND") ? std::getenv("VKS_RT_BACKEND") : "default",
                 lp.error().message.c_str());
    std::exit(77);
  }
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
