// channel: cross-thread MPSC delivery (exactly once, per-producer order), close semantics,
// cancellation of a waiting pop.
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "common.hpp"
#include "rt/channel.hpp"
#include "rt/io.hpp"
#include "rt/scope.hpp"

using namespace vks;
using namespace vks::rt;
using namespace std::chrono_literals;

TEST_CASE("channel: N producer threads, every item received exactly once", "[channel]") {
  auto lp = test::make_loop();
  channel<int> ch;
  constexpr int n_threads = 4, n_each = 2000;
  std::vector<std::thread> producers;
  std::vector<int> got;
  std::atomic<int> refused{0};  // pushes that failed (Catch2 assertions are not thread-safe)
  lp->run([&]() -> task<void> {
    for (int t = 0; t < n_threads; ++t)
      producers.emplace_back([&ch, &refused, t] {
        for (int i = 0; i < n_each; ++i)
          if (!ch.push(t * n_each + i)) ++refused;
      });
    std::thread closer([&] {
      for (auto& p : producers) p.join();
      ch.close();
    });
    while (auto v = co_await ch.pop()) got.push_back(*v);
    closer.join();
  }());
  CHECK(refused == 0);
  REQUIRE(got.size() == static_cast<std::size_t>(n_threads * n_each));
  std::set<int> uniq(got.begin(), got.end());
  CHECK(uniq.size() == got.size());
  // per-producer FIFO
  std::vector<int> last(n_threads, -1);
  for (int v : got) {
    int t = v / n_each;
    CHECK(v > last[static_cast<std::size_t>(t)]);
    last[static_cast<std::size_t>(t)] = v;
  }
}

TEST_CASE("channel: close delivers pending items, then nullopt; push after close fails", "[channel]") {
  auto lp = test::make_loop();
  channel<std::string> ch;
  REQUIRE(ch.push("a"));
  REQUIRE(ch.push("b"));
  ch.close();
  CHECK_FALSE(ch.push("c"));
  CHECK(ch.closed());
  std::vector<std::string> got;
  lp->run([&]() -> task<void> {
    while (auto v = co_await ch.pop()) got.push_back(*v);
    auto again = co_await ch.pop();
    CHECK_FALSE(again.has_value());
  }());
  CHECK(got == std::vector<std::string>{"a", "b"});
}

TEST_CASE("channel: a waiting pop wakes on close from another thread", "[channel]") {
  auto lp = test::make_loop();
  channel<int> ch;
  std::thread th;
  lp->run([&]() -> task<void> {
    th = std::thread([&] {
      std::this_thread::sleep_for(3ms);
      ch.close();
    });
    auto v = co_await ch.pop();
    CHECK_FALSE(v.has_value());
  }());
  th.join();
}

TEST_CASE("channel: a waiting pop is cancelled by its stop token", "[channel][cancel]") {
  auto lp = test::make_loop();
  channel<int> ch;
  lp->run([&]() -> task<void> {
    std::stop_source src;
    scope s;
    s.spawn(test::own([&]() -> task<void> {
      REQUIRE((co_await sleep_for(*lp, 2ms)).ok());
      src.request_stop();
    }));
    auto v = co_await ch.pop(src.get_token());
    CHECK_FALSE(v.has_value());
    co_await s.join();
    // the channel still works after a cancelled pop
    REQUIRE(ch.push(9));
    auto w = co_await ch.pop();
    REQUIRE(w.has_value());
    CHECK(*w == 9);
  }());
}

TEST_CASE("channel: move-only items", "[channel]") {
  auto lp = test::make_loop();
  channel<std::unique_ptr<int>> ch;
  REQUIRE(ch.push(std::make_unique<int>(5)));
  lp->run([&]() -> task<void> {
    auto v = co_await ch.pop();
    REQUIRE(v.has_value());
    CHECK(**v == 5);
  }());
}
