// Server layer units that need no model: option resolution (SageMaker rule), bearer auth,
// and the engine -> connection bridge (generation) against a fake engine whose events come
// from another thread, including the abort of unfinished requests.
#include "catch.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "http/request.hpp"
#include "rt/loop.hpp"
#include "rt/net.hpp"
#include "server/bidi.hpp"
#include "server/generation.hpp"
#include "server/replies.hpp"
#include "server/serve_options.hpp"
#include "server/service.hpp"

using namespace vks;
using namespace vks::server;
namespace eng = vks::engine;

namespace {

// Emits `n_tokens` token events then a finished event per sequence, from its own thread.
class fake_engine final : public eng::engine {
 public:
  explicit fake_engine(int n_tokens, bool finish = true) : n_tokens_(n_tokens), finish_(finish) { lim_.n_ctx = 64; }
  ~fake_engine() override {
    for (auto& t : threads_) t.join();
  }
  result<eng::request_handle> submit(eng::request req, std::shared_ptr<eng::event_sink> sink) override {
    if (req.prompt.empty()) return fail(errc::invalid_argument, "empty");
    const auto h = eng::request_handle{++next_};
    threads_.emplace_back([this, n = req.params.n, sink] {
      for (int s = 0; s < n; ++s) {
        for (int i = 0; i < n_tokens_; ++i) {
          eng::token_event te;
          te.seq = s;
          te.tokens = {i};
          te.text = "t" + std::to_string(i);
          te.n_completion_tokens = i + 1;
          sink->on_event(te);
        }
        if (finish_) {
          eng::finished_event fe;
          fe.seq = s;
          fe.reason = eng::finish_reason::length;
          sink->on_event(fe);
        }
      }
    });
    return h;
  }
  void abort(eng::request_handle h) noexcept override {
    std::lock_guard lk(mu_);
    aborted_.push_back(h);
  }
  const eng::engine_limits& limits() const noexcept override { return lim_; }
  eng::engine_stats stats() const override { return {}; }
  std::vector<eng::request_handle> aborted() {
    std::lock_guard lk(mu_);
    return aborted_;
  }

 private:
  int n_tokens_;
  bool finish_;
  eng::engine_limits lim_;
  std::uint64_t next_ = 0;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::vector<eng::request_handle> aborted_;
};

eng::request make_request(int n) {
  eng::request r;
  r.prompt = {1, 2, 3};
  r.params.n = n;
  return r;
}

struct env_guard {
  explicit env_guard(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
  }
  ~env_guard() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("serve options: defaults outside SageMaker", "[server]") {
  env_guard g("SAGEMAKER_BIND_TO_PORT");
  ::unsetenv("SAGEMAKER_BIND_TO_PORT");
  std::error_code ec;
  if (std::filesystem::exists("/opt/ml/model", ec)) {
    WARN("/opt/ml/model exists here: the non-SageMaker defaults cannot be checked");
    return;
  }
  serve_options o;
  o.model = "some/model.gguf";
  REQUIRE(resolve_serve_options(o).ok());
  CHECK(o.host == "127.0.0.1");
  CHECK(o.port == 8080);
  CHECK_FALSE(o.sagemaker);
  CHECK(o.served_model_name == "some/model.gguf");
}

TEST_CASE("serve options: SAGEMAKER_BIND_TO_PORT selects SageMaker mode", "[server]") {
  env_guard g("SAGEMAKER_BIND_TO_PORT");
  ::setenv("SAGEMAKER_BIND_TO_PORT", "9123", 1);
  serve_options o;
  o.model = "m.gguf";
  REQUIRE(resolve_serve_options(o).ok());
  CHECK(o.sagemaker);
  CHECK(o.host == "0.0.0.0");
  CHECK(o.port == 9123);

  serve_options explicit_port;
  explicit_port.model = "m.gguf";
  explicit_port.port = 7000;
  explicit_port.host = "127.0.0.1";
  REQUIRE(resolve_serve_options(explicit_port).ok());
  CHECK(explicit_port.port == 7000);
  CHECK(explicit_port.host == "127.0.0.1");

  ::setenv("SAGEMAKER_BIND_TO_PORT", "80x", 1);
  serve_options bad;
  bad.model = "m.gguf";
  auto r = resolve_serve_options(bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("SAGEMAKER_BIND_TO_PORT") != std::string::npos);
}

TEST_CASE("serve options: range checks", "[server]") {
  serve_options o;
  o.model = "m.gguf";
  o.port = 1;
  o.host = "127.0.0.1";
  o.block_size = 32;
  CHECK_FALSE(resolve_serve_options(o).ok());
  o.block_size = 16;
  o.gpu_memory_utilization = 1.5;
  CHECK_FALSE(resolve_serve_options(o).ok());
  o.gpu_memory_utilization = 0.5;
  o.max_num_seqs = 0;
  CHECK_FALSE(resolve_serve_options(o).ok());
  o.max_num_seqs = 4;
  CHECK(resolve_serve_options(o).ok());
}

TEST_CASE("bearer auth: exact key only", "[server]") {
  serve_options o;
  o.api_key = "sekrit";
  service svc(o);
  http::request req;
  CHECK_FALSE(authorized(svc, req));
  req.headers.add("authorization", "Bearer sekrit");
  CHECK(authorized(svc, req));
  for (const char* v : {"Bearer sekri", "Bearer sekrit2", "Basic sekrit", "sekrit", "Bearer ", "bearer SEKRIT"}) {
    http::request r2;
    r2.headers.add("authorization", v);
    CHECK_FALSE(authorized(svc, r2));
  }
  http::request lower;
  lower.headers.add("authorization", "bearer sekrit");
  CHECK(authorized(svc, lower));
  service open{serve_options{}};
  CHECK(authorized(open, http::request{}));
}

TEST_CASE("bearer auth: WebSocket upgrades may carry the key as a `bearer.` subprotocol", "[server]") {
  serve_options o;
  o.api_key = "sekrit";
  service svc(o);
  http::request up;
  up.upgrade = true;
  up.headers.add("sec-websocket-protocol", "vkserve, bearer.sekrit");
  CHECK(authorized(svc, up));
  for (const char* v : {"bearer.sekri", "bearer.sekrit2", "vkserve", "bearer.", "sekrit", "Bearer sekrit"}) {
    http::request r2;
    r2.upgrade = true;
    r2.headers.add("sec-websocket-protocol", v);
    CHECK_FALSE(authorized(svc, r2));
  }
  http::request plain = up;  // not an upgrade: the header means nothing
  plain.upgrade = false;
  CHECK_FALSE(authorized(svc, plain));
}

TEST_CASE("origin check: no Origin passes; others only when allow-listed", "[server]") {
  auto with_origin = [](const char* v) {
    http::request r;
    r.headers.add("origin", v);
    return r;
  };
  service none{serve_options{}};
  CHECK(origin_allowed(none, http::request{}));
  CHECK_FALSE(origin_allowed(none, with_origin("https://evil.example")));
  CHECK_FALSE(origin_allowed(none, with_origin("null")));
  serve_options o;
  o.allowed_origins = "https://good.example, http://localhost:3000/";
  service some(o);
  CHECK(origin_allowed(some, with_origin("https://good.example")));
  CHECK(origin_allowed(some, with_origin("HTTPS://GOOD.example")));
  CHECK(origin_allowed(some, with_origin("http://localhost:3000")));
  CHECK_FALSE(origin_allowed(some, with_origin("https://good.example.evil.example")));
  CHECK_FALSE(origin_allowed(some, with_origin("http://localhost:3001")));
  serve_options star;
  star.allowed_origins = "*";
  service any(star);
  CHECK(origin_allowed(any, with_origin("https://whatever.example")));
}

TEST_CASE("bidi port: on by default only in SageMaker mode; explicit values stay", "[server]") {
  bidi_options a;
  resolve_bidi_port(a, false);
  CHECK(a.port == -1);
  bidi_options b;
  resolve_bidi_port(b, true);
  CHECK(b.port == 8081);
  bidi_options c;
  c.port = 0;
  resolve_bidi_port(c, false);
  CHECK(c.port == 0);
  bidi_options d;
  d.port = 9000;
  resolve_bidi_port(d, true);
  CHECK(d.port == 9000);
}

TEST_CASE("X-Request-Id is taken only when printable and short", "[server]") {
  http::request r;
  r.headers.add("x-request-id", "abc-123");
  CHECK(client_request_id(r) == "abc-123");
  http::request bad;
  bad.headers.add("x-request-id", "a b");
  CHECK(client_request_id(bad).empty());
  CHECK(client_request_id(http::request{}).empty());
}

TEST_CASE("generation: events from the engine thread reach the loop in order", "[server]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  fake_engine eng(5);
  std::vector<std::string> texts;
  int n_finished = 0;
  (*lp)->run([&]() -> rt::task<void> {
    generation gen(eng);
    REQUIRE(gen.submit(make_request(2)).ok());
    REQUIRE(gen.submit(make_request(1)).ok());
    while (!gen.finished()) {
      auto ev = co_await gen.next({});
      REQUIRE(ev.has_value());
      if (auto* t = std::get_if<eng::token_event>(&ev->ev)) texts.push_back(std::to_string(ev->source) + t->text);
      if (std::holds_alternative<eng::finished_event>(ev->ev)) ++n_finished;
    }
  }());
  CHECK(n_finished == 3);
  CHECK(texts.size() == 15);
  CHECK(eng.aborted().empty());
}

TEST_CASE("generation: an unfinished request is aborted when the handler leaves", "[server]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  fake_engine eng(3, /*finish=*/false);
  (*lp)->run([&]() -> rt::task<void> {
    generation gen(eng);
    REQUIRE(gen.submit(make_request(1)).ok());
    auto ev = co_await gen.next({});
    REQUIRE(ev.has_value());
    CHECK_FALSE(gen.finished());
  }());
  REQUIRE(eng.aborted().size() == 1);
  CHECK(static_cast<std::uint64_t>(eng.aborted()[0]) == 1);
}

TEST_CASE("generation: a stopped token ends the wait (client gone)", "[server]") {
  auto lp = rt::loop::create();
  REQUIRE(lp.ok());
  fake_engine eng(0, /*finish=*/false);
  std::stop_source gone;
  gone.request_stop();
  bool got = true;
  (*lp)->run([&]() -> rt::task<void> {
    generation gen(eng);
    REQUIRE(gen.submit(make_request(1)).ok());
    auto ev = co_await gen.next(gone.get_token());
    got = ev.has_value();
  }());
  CHECK_FALSE(got);
  CHECK(eng.aborted().size() == 1);
}

TEST_CASE("generation: submit errors are returned and nothing is tracked", "[server]") {
  fake_engine eng(1);
  generation gen(eng);
  eng::request r;
  auto s = gen.submit(std::move(r));
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code == errc::invalid_argument);
  CHECK(gen.finished());
}

TEST_CASE("open routes name the model only when that cannot reveal a path", "[server]") {
  serve_options o;
  o.model = "/srv/models/secret/qwen.gguf";
  o.served_model_name = o.model;  // what resolve_serve_options derives without a name
  CHECK_FALSE(served_name_is_public(service(o)));
  o.expose_model_path = true;
  CHECK(served_name_is_public(service(o)));
  o.expose_model_path = false;
  o.served_model_name = "qwen";
  CHECK(served_name_is_public(service(o)));
}

TEST_CASE("model name check: served name, omitted, unknown, lenient", "[server]") {
  serve_options o;
  o.served_model_name = "m";
  service svc(o);
  CHECK(check_model(svc, "").ok());
  CHECK(check_model(svc, "m").ok());
  auto r = check_model(svc, "gpt-4");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::not_found);
  CHECK(r.error().message.find("gpt-4") != std::string::npos);
  o.skip_model_name_validation = true;
  service lenient(o);
  CHECK(check_model(lenient, "gpt-4").ok());
}

TEST_CASE("SAGEMAKER_SAFE_PORT_RANGE parsing", "[server][sagemaker]") {
  using R = std::optional<std::pair<int, int>>;
  CHECK(parse_port_range("23000-23999") == R(std::pair{23000, 23999}));
  CHECK(parse_port_range(" 8081 - 8081 ") == R(std::pair{8081, 8081}));
  CHECK_FALSE(parse_port_range(""));
  CHECK_FALSE(parse_port_range("23000"));
  CHECK_FALSE(parse_port_range("23999-23000"));
  CHECK_FALSE(parse_port_range("0-10"));
  CHECK_FALSE(parse_port_range("1-65536"));
  CHECK_FALSE(parse_port_range("a-b"));
  CHECK_FALSE(parse_port_range("-5"));
  CHECK_FALSE(parse_port_range("1--5"));
}

TEST_CASE("bidi port: outside SAGEMAKER_SAFE_PORT_RANGE the first free port inside is taken", "[server][sagemaker]") {
  // Find two adjacent free ports: hold the first so the range's first port is busy.
  auto busy = rt::listen_tcp("127.0.0.1", 0, false, 4);
  REQUIRE(busy.ok());
  const int lo = *rt::bound_port(*busy);
  if (lo >= 65535) {
    ::close(*busy);
    WARN("ephemeral port at the top of the range; not checked");
    return;
  }
  serve_options so;
  service svc(so);
  bidi_options bo;
  bo.port = 8081;
  if (lo <= 8081 && 8081 <= lo + 1) bo.port = 1;  // keep the requested port outside the range
  auto p = bidi_port::open(svc, bo, "127.0.0.1", std::pair{lo, lo + 1});
  if (!p) {
    ::close(*busy);
    WARN("port " << lo + 1 << " is taken, not checked: " << p.error().message);
    return;
  }
  REQUIRE(*p != nullptr);
  CHECK((*p)->port() == lo + 1);
  p->reset();
  // A requested port inside the range is used as is; a range with no free port fails.
  bo.port = lo;
  auto none = bidi_port::open(svc, bo, "127.0.0.1", std::pair{lo, lo});
  CHECK_FALSE(none.ok());
  ::close(*busy);
}

TEST_CASE("bearer auth: several comma-separated keys, each identifying its client", "[server]") {
  serve_options o;
  o.api_key = "alpha, beta ,,gamma";
  CHECK(api_keys(o) == std::vector<std::string>{"alpha", "beta", "gamma"});
  service svc(o);
  auto with = [](const char* v) {
    http::request r;
    r.headers.add("authorization", v);
    return r;
  };
  CHECK(api_key_index(svc, with("Bearer alpha")) == 0);
  CHECK(api_key_index(svc, with("Bearer beta")) == 1);
  CHECK(api_key_index(svc, with("Bearer gamma")) == 2);
  CHECK(api_key_index(svc, with("Bearer alpha,beta")) == -1);
  CHECK(api_key_index(svc, http::request{}) == -1);
  CHECK(authorized(svc, with("Bearer beta")));
  CHECK_FALSE(authorized(svc, with("Bearer delta")));
  // Per-key cache salt: off by default; on, distinct per key and never the key itself.
  CHECK(cache_salt_prefix(svc, with("Bearer alpha")).empty());
  o.prefix_cache_salt_per_key = true;
  service salted(o);
  const auto a = cache_salt_prefix(salted, with("Bearer alpha"));
  const auto b = cache_salt_prefix(salted, with("Bearer beta"));
  CHECK(!a.empty());
  CHECK(a != b);
  CHECK(a.find("alpha") == std::string::npos);
  CHECK(cache_salt_prefix(salted, with("Bearer delta")).empty());
  // A list with no key is refused at start-up.
  serve_options none;
  none.api_key = " , ";
  none.port = 8080;
  none.model = "m.gguf";
  auto r = resolve_serve_options(none);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("--api-key") != std::string::npos);
  serve_options keyless;
  keyless.port = 8080;
  keyless.model = "m.gguf";
  keyless.prefix_cache_salt_per_key = true;
  auto k = resolve_serve_options(keyless);
  REQUIRE_FALSE(k.ok());
  CHECK(k.error().message.find("--prefix-cache-salt-per-key") != std::string::npos);
}

namespace {
// Records what reaches the engine; no events.
class recording_engine final : public eng::engine {
 public:
  result<eng::request_handle> submit(eng::request req, std::shared_ptr<eng::event_sink>) override {
    seen.push_back(std::move(req));
    return eng::request_handle{seen.size()};
  }
  void abort(eng::request_handle) noexcept override {}
  const eng::engine_limits& limits() const noexcept override { return lim_; }
  eng::engine_stats stats() const override { return {}; }
  std::vector<eng::request> seen;

 private:
  eng::engine_limits lim_;
};
}  // namespace

TEST_CASE("generation: one fairness group per client request; the salt prefix leads each cache_salt", "[server]") {
  recording_engine eng;
  {
    generation g1(eng, std::string("key1\0", 5));
    generation g2(eng);
    auto a = make_request(1);
    a.cache_salt = "s";
    REQUIRE(g1.submit(a).ok());
    REQUIRE(g1.submit(make_request(2)).ok());
    REQUIRE(g2.submit(make_request(1)).ok());
  }
  REQUIRE(eng.seen.size() == 3);
  CHECK(eng.seen[0].group != 0);
  CHECK(eng.seen[0].group == eng.seen[1].group);  // the prompts of one request share a group
  CHECK(eng.seen[2].group != eng.seen[0].group);  // another request: another group
  CHECK(eng.seen[0].cache_salt == std::string("key1\0s", 6));
  CHECK(eng.seen[1].cache_salt == std::string("key1\0", 5));
  CHECK(eng.seen[2].cache_salt.empty());
}
