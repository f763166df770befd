// loop: backend selection, timers (ordering, zero durations), sleep cancellation (same
// thread, other thread, deadline), posted work from other threads, idle polling, stop().
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common.hpp"
#include "rt/io.hpp"
#include "rt/scope.hpp"
#include "rt/timeout.hpp"

using namespace vks;
using namespace vks::rt;
using namespace std::chrono_literals;

TEST_CASE("loop picks the backend asked for", "[loop]") {
  auto lp = test::make_loop();
  const char* env = std::getenv("VKS_RT_BACKEND");
  if (env && std::string_view(env) == "epoll") CHECK(lp->kind() == backend::epoll);
  if (env && std::string_view(env) == "io_uring") CHECK(lp->kind() == backend::io_uring);
  auto forced = loop::create(loop_options{backend::epoll});
  REQUIRE(forced.ok());
  CHECK((*forced)->kind() == backend::epoll);
}

TEST_CASE("bad VKS_RT_BACKEND is an error value", "[loop]") {
  const char* old = std::getenv("VKS_RT_BACKEND");
  std::string saved = old ? old : "";
  ::setenv("VKS_RT_BACKEND", "kqueue", 1);
  auto lp = loop::create();
  if (old) ::setenv("VKS_RT_BACKEND", saved.c_str(), 1);
  else ::unsetenv("VKS_RT_BACKEND");
  REQUIRE_FALSE(lp.ok());
  CHECK(lp.error().code == errc::invalid_argument);
}

TEST_CASE("timers fire in deadline order, ties in start order", "[loop][timer]") {
  auto lp = test::make_loop();
  std::vector<int> order;
  lp->run([&]() -> task<void> {
    scope s;
    auto sleeper = [&](int id, std::chrono::milliseconds d) -> task<void> {
      auto r = co_await sleep_for(*lp, d);
      REQUIRE(r.ok());
      order.push_back(id);
    };
    s.spawn(sleeper(3, 30ms));
    s.spawn(sleeper(1, 1ms));
    s.spawn(sleeper(2, 10ms));
    s.spawn(sleeper(10, 0ms));
    s.spawn(sleeper(11, 0ms));
    s.spawn(sleeper(12, -5ms));
    co_await s.join();
  }());
  CHECK(order == std::vector<int>{10, 11, 12, 1, 2, 3});
}

TEST_CASE("a zero sleep in a loop does not starve other work", "[loop][timer]") {
  auto lp = test::make_loop();
  int spins = 0;
  lp->run([&]() -> task<void> {
    scope s;
    std::stop_source stop;
    s.spawn(test::own([&]() -> task<void> {
      while (!stop.stop_requested()) {
        REQUIRE((co_await sleep_for(*lp, 0ns)).ok());
        ++spins;
      }
    }));
    REQUIRE((co_await sleep_for(*lp, 2ms)).ok());
    stop.request_stop();
    co_await s.join();
  }());
  CHECK(spins > 0);
}

TEST_CASE("sleep is cancelled by its stop token", "[loop][timer][cancel]") {
  auto lp = test::make_loop();
  lp->run([&]() -> task<void> {
    std::stop_source src;
    scope s;
    errc got = errc::internal;
    s.spawn(test::own([&]() -> task<void> {
      auto r = co_await sleep_for(*lp, 10s, src.get_token());
      REQUIRE_FALSE(r.ok());
      got = r.error().code;
    }));
    REQUIRE((co_await sleep_for(*lp, 1ms)).ok());
    src.request_stop();
    co_await s.join();
    CHECK(got == errc::cancelled);
    // already stopped: cancelled without waiting
    auto r2 = co_await sleep_for(*lp, 10s, src.get_token());
    CHECK(r2.error().code == errc::cancelled);
  }());
}

TEST_CASE("sleep is cancelled from another thread", "[loop][timer][cancel]") {
  auto lp = test::make_loop();
  std::stop_source src;
  std::thread th;
  lp->run([&]() -> task<void> {
    th = std::thread([&] {
      std::this_thread::sleep_for(5ms);
      src.request_stop();
    });
    auto r = co_await sleep_for(*lp, 10s, src.get_token());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::cancelled);
  }());
  th.join();
}

TEST_CASE("deadline stops its token after the duration", "[loop][timeout]") {
  auto lp = test::make_loop();
  lp->run([&]() -> task<void> {
    deadline dl(*lp, 5ms);
    auto r = map_timeout(co_await sleep_for(*lp, 10s, dl.token()), dl);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::timeout);
    CHECK(dl.expired());

    // a deadline that does not expire leaves the operation alone
    deadline long_dl(*lp, 10s);
    auto r2 = map_timeout(co_await sleep_for(*lp, 1ms, long_dl.token()), long_dl);
    CHECK(r2.ok());
    CHECK_FALSE(long_dl.expired());
    CHECK(long_dl.reset(20s));

    // parent stop propagates, but is not a timeout
    std::stop_source parent;
    deadline child(*lp, 10s, parent.get_token());
    parent.request_stop();
    auto r3 = map_timeout(co_await sleep_for(*lp, 10s, child.token()), child);
    REQUIRE_FALSE(r3.ok());
    CHECK(r3.error().code == errc::cancelled);
    CHECK_FALSE(child.reset(1s));
  }());
}

TEST_CASE("a kept deadline re-arms later and earlier, disarms, and expires once", "[loop][timeout]") {
  auto lp = test::make_loop();
  lp->run([&]() -> task<void> {
    deadline dl(*lp);  // not armed
    CHECK((co_await sleep_for(*lp, 5ms, dl.token())).ok());
    // Armed at 5 ms, then moved to 10 s: the timer placed for 5 ms must not expire it.
    CHECK(dl.reset(5ms));
    CHECK(dl.reset(10s));
    CHECK((co_await sleep_for(*lp, 15ms, dl.token())).ok());
    CHECK_FALSE(dl.expired());
    // Moved earlier again (10 s -> 5 ms): it expires at 5 ms.
    CHECK(dl.reset(5ms));
    auto t0 = std::chrono::steady_clock::now();
    auto r = map_timeout(co_await sleep_for(*lp, 10s, dl.token()), dl);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::timeout);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK_FALSE(dl.reset(1s));  // stopped for good

    // Disarmed between uses: never expires, however long the wait.
    deadline kept(*lp);
    for (int i = 0; i < 3; ++i) {
      CHECK(kept.reset(3ms));
      CHECK((co_await sleep_for(*lp, 1ms, kept.token())).ok());
      kept.disarm();
      CHECK((co_await sleep_for(*lp, 6ms, kept.token())).ok());
    }
    CHECK_FALSE(kept.expired());
    CHECK(kept.reset(2ms));  // and armed again it expires
    auto r2 = map_timeout(co_await sleep_for(*lp, 10s, kept.token()), kept);
    REQUIRE_FALSE(r2.ok());
    CHECK(r2.error().code == errc::timeout);
  }());
}

TEST_CASE("post from other threads runs every item on the loop thread", "[loop][post]") {
  auto lp = test::make_loop();
  constexpr int n_threads = 4, n_each = 500;
  std::atomic<int> count{0};
  std::vector<std::thread> ths;
  std::thread::id loop_tid;
  bool all_on_loop = true;
  lp->run([&]() -> task<void> {
    loop_tid = std::this_thread::get_id();
    for (int t = 0; t < n_threads; ++t)
      ths.emplace_back([&] {
        for (int i = 0; i < n_each; ++i)
          lp->post([&] {
            if (std::this_thread::get_id() != loop_tid) all_on_loop = false;
            count.fetch_add(1);
          });
      });
    for (auto& th : ths) th.join();
    while (count.load() < n_threads * n_each) REQUIRE((co_await sleep_for(*lp, 1ms)).ok());
  }());
  CHECK(count.load() == n_threads * n_each);
  CHECK(all_on_loop);
}

TEST_CASE("idle polling: posted work and timers still run, and the loop sleeps after its window", "[loop][idle_poll]") {
  loop_options o;
  o.idle_poll = 2ms;
  auto lp = test::make_loop(o);
  std::atomic<int> count{0};
  std::thread poster;
  timespec cpu0{}, cpu1{};
  lp->run([&]() -> task<void> {
    poster = std::thread([&] {
      for (int i = 0; i < 200; ++i) lp->post([&] { count.fetch_add(1); });
    });
    poster.join();
    while (count.load() < 200) REQUIRE((co_await sleep_for(*lp, 100us)).ok());
    // A timer shorter than the window fires on time (the window stops at it)...
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE((co_await sleep_for(*lp, 1ms)).ok());
    CHECK(std::chrono::steady_clock::now() - t0 < 1s);
    // ...and a long idle stretch is slept, not spun: the loop thread uses a small share of
    // CPU over 300 ms (spinning would use all of it).
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    const auto waits = lp->blocking_waits();
    REQUIRE((co_await sleep_for(*lp, 300ms)).ok());
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    CHECK(lp->blocking_waits() > waits);
  }());
  CHECK(count.load() == 200);
  const double cpu_ms = (cpu1.tv_sec - cpu0.tv_sec) * 1e3 + (cpu1.tv_nsec - cpu0.tv_nsec) / 1e6;
  CHECK(cpu_ms < 150.0);
}

TEST_CASE("post_resume moves a coroutine onto the loop from another thread", "[loop][post]") {
  auto lp = test::make_loop();
  std::thread th;
  std::thread::id loop_tid, resumed_on;
  lp->run([&]() -> task<void> {
    loop_tid = std::this_thread::get_id();
    struct hop {
      loop* lp;
      std::thread* th;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) {
        *th = std::thread([l = lp, h] { l->post_resume(h); });
      }
      void await_resume() const noexcept {}
    };
    co_await hop{lp.get(), &th};
    resumed_on = std::this_thread::get_id();
  }());
  th.join();
  CHECK(resumed_on == loop_tid);
}

TEST_CASE("stop() from another thread reaches main through stop_token()", "[loop][stop]") {
  auto lp = test::make_loop();
  std::thread th;
  lp->run([&]() -> task<void> {
    th = std::thread([&] { lp->stop(); });
    auto r = co_await sleep_for(*lp, 10s, lp->stop_token());
    CHECK(r.error().code == errc::cancelled);
  }());
  th.join();
}

TEST_CASE("run rethrows main's exception and the loop is reusable", "[loop]") {
  auto lp = test::make_loop();
  CHECK_THROWS_WITH(lp->run([]() -> task<void> {
    throw std::runtime_error("main failed");
    co_return;
  }()), "main failed");
  int x = 0;
  lp->run([&]() -> task<void> {
    REQUIRE((co_await sleep_for(*lp, 0ns)).ok());
    x = 1;
  }());
  CHECK(x == 1);
}
