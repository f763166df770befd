// prep_pool: work runs on a worker while the loop keeps running, the queue bound answers
// "busy" at once, the deadline answers without waiting for the worker (whose late result
// is then freed, not leaked), a caller that leaves withdraws its queued job, exceptions
// fail the one request, and shutdown hands queued jobs back as errors.
// Catch2 is not thread-safe: workers only set atomics; the loop (main thread) asserts.
#include "catch.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <memory>
#include <stdexcept>
#include <thread>

#include "rt/io.hpp"
#include "rt/loop.hpp"
#include "rt/scope.hpp"
#include "server/prep_pool.hpp"
#include "server/serve_options.hpp"
#include "server/service.hpp"

using namespace vks;
using namespace vks::server;
using namespace std::chrono_literals;

namespace {

// A worker-side gate the loop opens; workers poll it (no Catch calls off the main thread).
struct gate {
  std::atomic<bool> open{false};
  void wait() const {
    while (!open.load()) std::this_thread::sleep_for(1ms);
  }
};

// Counts live instances: a result dropped by the pool must be destroyed, not leaked.
struct tracked {
  static inline std::atomic<int> n_live{0};
  tracked() { ++n_live; }
  tracked(const tracked&) { ++n_live; }
  tracked(tracked&&) noexcept { ++n_live; }
  ~tracked() { --n_live; }
};

// Spawned children are plain coroutine functions: a capturing lambda coroutine would read
// its captures through a closure object that dies at the end of the spawn statement.
rt::task<void> run_job(prep_pool& pool, std::function<result<int>()> fn, std::optional<result<int>>& out,
                       std::stop_token stop = {}) {
  out.emplace(co_await pool.run(std::move(fn), std::move(stop)));
}

rt::task<void> tick_then_open(rt::loop& lp, int& n_ticks, gate& g) {
  for (; n_ticks < 3; ++n_ticks) (void)co_await rt::sleep_for(lp, 5ms);
  g.open = true;
}

prep_options opts(int n_threads, int max_pending, std::chrono::milliseconds timeout = 30s) {
  prep_options o;
  o.n_threads = n_threads;
  o.max_pending = max_pending;
  o.timeout = timeout;
  return o;
}

}  // namespace

TEST_CASE("prep pool: work runs on a worker while the loop keeps serving", "[server][prep]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  prep_pool pool(opts(1, 4));
  gate g;
  std::atomic<bool> ran_off_loop{false};
  const auto loop_thread = std::this_thread::get_id();
  std::optional<result<int>> out;
  int n_ticks = 0;
  (*lp)->run([&]() -> rt::task<void> {
    rt::scope s;
    // The job blocks until the loop, still running, has counted three timer ticks.
    s.spawn(run_job(pool, [&]() -> result<int> {
      ran_off_loop = std::this_thread::get_id() != loop_thread;
      g.wait();
      return 42;
    }, out));
    s.spawn(tick_then_open(**lp, n_ticks, g));
    co_await s.join();
  }());
  CHECK(ran_off_loop);
  CHECK(n_ticks == 3);
  REQUIRE(out);
  REQUIRE(out->ok());
  CHECK(**out == 42);
}

TEST_CASE("prep pool: a full queue answers busy at once", "[server][prep]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  prep_pool pool(opts(1, 1));
  gate g;
  std::atomic<int> n_done{0};
  std::optional<vks::error> refused;
  std::optional<result<int>> first, second;
  (*lp)->run([&]() -> rt::task<void> {
    rt::scope s;
    std::function<result<int>()> job = [&]() -> result<int> {
      g.wait();
      return ++n_done;
    };
    s.spawn(run_job(pool, job, first));  // runs
    while (pool.n_running() == 0) (void)co_await rt::sleep_for(**lp, 1ms);
    s.spawn(run_job(pool, job, second));  // queued
    CHECK(pool.n_queued() == 1);
    auto r = co_await pool.run(job);  // over the bound: refused without waiting
    REQUIRE_FALSE(r.ok());
    refused = r.error();
    g.open = true;
    co_await s.join();
  }());
  REQUIRE(refused);
  CHECK(refused->code == errc::shutting_down);  // 503 + Retry-After at the API
  CHECK(refused->message.find("busy preparing requests") != std::string::npos);
  CHECK(n_done == 2);
  REQUIRE((first && second));
  CHECK((first->ok() && second->ok()));
  CHECK(pool.n_rejected() == 1);
}

TEST_CASE("prep pool: with no queue allowed, idle workers still take work", "[server][prep]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  prep_pool pool(opts(1, 0));
  gate g;
  std::optional<result<int>> first, second;
  (*lp)->run([&]() -> rt::task<void> {
    rt::scope s;
    s.spawn(run_job(pool, [&]() -> result<int> {
      g.wait();
      return 1;
    }, first));  // the idle worker takes it
    while (pool.n_running() == 0) (void)co_await rt::sleep_for(**lp, 1ms);
    s.spawn(run_job(pool, []() -> result<int> { return 2; }, second));  // would have to wait
    g.open = true;
    co_await s.join();
  }());
  REQUIRE((first && second));
  CHECK(first->ok());
  REQUIRE_FALSE(second->ok());
  CHECK(second->error().message.find("busy preparing requests") != std::string::npos);
}

TEST_CASE("prep pool: the deadline answers first and the late result is freed", "[server][prep]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  gate g;
  std::atomic<bool> finished{false};
  std::optional<vks::error> err;
  {
    prep_pool pool(opts(1, 4, 20ms));
    (*lp)->run([&]() -> rt::task<void> {
      auto r = co_await pool.run([&]() -> result<std::shared_ptr<tracked>> {
        auto t = std::make_shared<tracked>();
        g.wait();
        finished = true;
        return t;
      });
      REQUIRE_FALSE(r.ok());
      err = r.error();
    }());
    CHECK_FALSE(finished);  // the answer did not wait for the worker
    CHECK(pool.n_timed_out() == 1);
    g.open = true;
    pool.shutdown();  // joins the worker: its result went into a channel nobody reads
  }
  REQUIRE(err);
  CHECK(err->code == errc::shutting_down);
  CHECK(err->message.find("could not be prepared within") != std::string::npos);
  CHECK(finished);
  CHECK(tracked::n_live == 0);
}

TEST_CASE("prep pool: a caller that leaves withdraws its queued job", "[server][prep]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  prep_pool pool(opts(1, 4));
  gate g;
  std::atomic<bool> second_ran{false};
  auto payload = std::make_shared<tracked>();  // stands for the request body the job owns
  std::optional<result<int>> first, second;
  std::stop_source client;
  (*lp)->run([&]() -> rt::task<void> {
    rt::scope s;
    s.spawn(run_job(pool, [&]() -> result<int> {
      g.wait();
      return 1;
    }, first));
    while (pool.n_running() == 0) (void)co_await rt::sleep_for(**lp, 1ms);
    s.spawn(run_job(pool, [&second_ran, p = payload]() -> result<int> {
      second_ran = true;
      return static_cast<int>(p.use_count());
    }, second, client.get_token()));
    CHECK(payload.use_count() == 2);
    client.request_stop();  // the client disconnects while its job waits
    (void)co_await rt::sleep_for(**lp, 1ms);
    CHECK(pool.n_queued() == 0);
    CHECK(payload.use_count() == 1);  // freed at once, not when a worker gets to it
    g.open = true;
    co_await s.join();
  }());
  REQUIRE(second);
  REQUIRE_FALSE(second->ok());
  CHECK(second->error().code == errc::cancelled);
  CHECK(pool.n_withdrawn() == 1);
  pool.shutdown();
  CHECK_FALSE(second_ran);
}

TEST_CASE("prep pool: an exception fails that request only", "[server][prep]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  prep_pool pool(opts(1, 4));
  std::optional<vks::error> oom, other;
  int after = 0;
  (*lp)->run([&]() -> rt::task<void> {
    auto a = co_await pool.run([]() -> result<int> { throw std::bad_alloc(); });
    REQUIRE_FALSE(a.ok());
    oom = a.error();
    auto b = co_await pool.run([]() -> result<int> { throw std::runtime_error("boom"); });
    REQUIRE_FALSE(b.ok());
    other = b.error();
    auto c = co_await pool.run([]() -> result<int> { return 7; });
    REQUIRE(c.ok());
    after = *c;
  }());
  CHECK(oom->code == errc::out_of_memory);
  CHECK(other->code == errc::internal);
  CHECK(after == 7);
}

TEST_CASE("prep pool: shutdown answers queued jobs and refuses new ones", "[server][prep]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  prep_pool pool(opts(1, 4));
  gate g;
  std::optional<vks::error> refused;
  std::optional<result<int>> first, dropped;
  std::thread closer;
  (*lp)->run([&]() -> rt::task<void> {
    rt::scope s;
    s.spawn(run_job(pool, [&]() -> result<int> {
      g.wait();
      return 1;
    }, first));
    while (pool.n_running() == 0) (void)co_await rt::sleep_for(**lp, 1ms);
    s.spawn(run_job(pool, []() -> result<int> { return 2; }, dropped));
    // shutdown() joins the running worker, so it runs on another thread; the gate opens
    // once the queued job has been dropped.
    closer = std::thread([&] { pool.shutdown(); });
    while (pool.n_queued() != 0) (void)co_await rt::sleep_for(**lp, 1ms);
    g.open = true;
    co_await s.join();
    auto r = co_await pool.run([]() -> result<int> { return 3; });
    REQUIRE_FALSE(r.ok());
    refused = r.error();
  }());
  closer.join();
  REQUIRE((first && dropped));
  CHECK(first->ok());
  REQUIRE_FALSE(dropped->ok());
  CHECK(dropped->error().message == "the server is shutting down");
  REQUIRE(refused);
  CHECK(refused->code == errc::shutting_down);
}

TEST_CASE("prep options: defaults, ranges and the service's pool", "[server][prep]") {
  serve_options o;
  o.model = "m.gguf";
  o.port = 1;
  o.host = "127.0.0.1";
  REQUIRE(resolve_serve_options(o).ok());
  CHECK(o.prep_threads == 0);
  CHECK(o.max_pending_preps == 128);
  CHECK(o.prep_timeout_s == 30.0);
  CHECK(default_prep_threads() >= 2);
  CHECK(default_prep_threads() <= 8);
  o.prep_timeout_s = 0;
  CHECK_FALSE(resolve_serve_options(o).ok());
  o.prep_timeout_s = 1.5;
  o.prep_threads = -1;
  CHECK_FALSE(resolve_serve_options(o).ok());
  o.prep_threads = 3;
  o.max_pending_preps = -1;
  CHECK_FALSE(resolve_serve_options(o).ok());
  o.max_pending_preps = 7;
  REQUIRE(resolve_serve_options(o).ok());
  service svc(o);
  CHECK(svc.prep().options().n_threads == 3);
  CHECK(svc.prep().options().max_pending == 7);
  CHECK(svc.prep().options().timeout == 1500ms);
}
