// The HTTP server over real loopback sockets, on the backend named by VKS_RT_BACKEND:
// keep-alive, pipelining, chunked bodies, limits (431/413/400), routing errors (404/405),
// timeouts (408, idle close), 100-continue, HEAD, HTTP/1.0, tiny socket buffers,
// streaming/SSE with backpressure, disconnect detection, graceful drain and abort.
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "client.hpp"
#include "http/errors.hpp"
#include "http/sse.hpp"
#include "rt/io.hpp"

using namespace vks;
using namespace vks::http;
using namespace vks::http::test;
using namespace std::chrono_literals;

namespace {

router basic_routes() {
  router r;
  r.get("/health", [](request&, response_writer& w) -> rt::task<void> {
    co_await w.send(response::json(200, R"({"status":"ok"})"));
  });
  r.get("/echo/{name}", [](request& req, response_writer& w) -> rt::task<void> {
    co_await w.send(response::text(200, std::string(req.param("name"))));
  });
  r.post("/echo", [](request& req, response_writer& w) -> rt::task<void> {
    co_await w.send(response::text(200, req.body));
  });
  r.get("/silent", [](request&, response_writer&) -> rt::task<void> { co_return; });
  r.get("/big", [](request& req, response_writer& w) -> rt::task<void> {
    std::size_t n = std::stoul(std::string(req.query()));
    std::string body(n, 'x');
    for (std::size_t i = 0; i < n; ++i) body[i] = static_cast<char>('a' + i % 26);
    co_await w.send(response::text(200, std::move(body)));
  });
  r.get("/sse", [](request&, response_writer& w) -> rt::task<void> {
    sse_writer sse(w);
    if (!co_await sse.begin()) co_return;
    for (int i = 0; i < 3; ++i)
      if (!co_await sse.send(R"({"i":)" + std::to_string(i) + "}")) co_return;
    (void)co_await sse.done();
  });
  r.get("/slow", [](request&, response_writer& w) -> rt::task<void> {
    (void)co_await rt::sleep_for(*rt::loop::current(), 200ms, w.disconnected());
    co_await w.send(response::text(200, "slow done"));
  });
  return r;
}

server_options fast_opts() {
  server_options o;
  o.header_timeout = 300ms;
  o.body_timeout = 300ms;
  o.idle_timeout = 300ms;
  o.drain_timeout = 2000ms;
  return o;
}

nlohmann::json error_of(const client_response& r) {
  auto j = nlohmann::json::parse(r.body);
  REQUIRE(j.contains("error"));
  CHECK(j["error"]["code"] == r.status);
  CHECK(j["error"]["message"].is_string());
  CHECK(j["error"]["type"].is_string());
  CHECK(j["error"].contains("param"));
  return j;
}

}  // namespace

TEST_CASE("server: keep-alive serves several requests on one connection", "[http][server]") {
  test_server s(basic_routes(), fast_opts());
  client c(s.port());
  for (int i = 0; i < 3; ++i) {
    REQUIRE(c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->version == "HTTP/1.1");
    CHECK(r->body == R"({"status":"ok"})");
    CHECK(*r->headers.find("content-type") == "application/json");
    CHECK_FALSE(r->headers.contains("connection"));
  }
  REQUIRE(c.send("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n"));
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(*r->headers.find("connection") == "close");
  CHECK(c.at_eof());
}

TEST_CASE("server: pipelined requests are answered in order", "[http][server]") {
  test_server s(basic_routes(), fast_opts());
  client c(s.port());
  std::string batch;
  for (int i = 0; i < 20; ++i) batch += "GET /echo/n" + std::to_string(i) + " HTTP/1.1\r\n\r\n";
  batch += "POST /echo HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody";
  batch += "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  REQUIRE(c.send(batch));
  for (int i = 0; i < 20; ++i) {
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->body == "n" + std::to_string(i));
  }
  CHECK(c.read_response()->body == "body");
  CHECK(c.read_response()->body == "abcde");
}

TEST_CASE("server: chunked and large bodies over tiny socket buffers", "[http][server]") {
  server_options o = fast_opts();
  o.body_timeout = 5000ms;
  test_server s(basic_routes(), o, 4096);
  client c(s.port(), 4096, 4096);
  std::string body(1 << 20, '\0');
  for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('A' + i % 23);
  std::string chunked;
  for (std::size_t off = 0; off < body.size(); off += 1000) {
    auto piece = body.substr(off, 1000);
    char hex[16];
    std::snprintf(hex, sizeof hex, "%zx", piece.size());
    chunked += std::string(hex) + "\r\n" + piece + "\r\n";
  }
  chunked += "0\r\n\r\n";
  std::thread writer([&] { c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked, 777); });
  auto r = c.read_response();
  writer.join();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == body);
  // A 3 MiB response read through a 4 KiB receive buffer.
  REQUIRE(c.send("GET /big?3145728 HTTP/1.1\r\n\r\n"));
  r = c.read_response();
  REQUIRE(r);
  REQUIRE(r->body.size() == 3145728u);
  CHECK(r->body[3145727] == static_cast<char>('a' + 3145727 % 26));
}

TEST_CASE("server: routing errors are OpenAI-shaped JSON", "[http][server]") {
  test_server s(basic_routes(), fast_opts());
  client c(s.port());
  REQUIRE(c.send("GET /nope HTTP/1.1\r\n\r\n"));
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == 404);
  CHECK(error_of(*r)["error"]["type"] == "NotFoundError");
  REQUIRE(c.send("DELETE /health HTTP/1.1\r\n\r\n"));
  r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == 405);
  CHECK(*r->headers.find("allow") == "GET, HEAD");
  error_of(*r);
  // The connection survives routing errors.
  REQUIRE(c.send("GET /health HTTP/1.1\r\n\r\n"));
  CHECK(c.read_response()->status == 200);
  // A handler that answers nothing -> 500.
  REQUIRE(c.send("GET /silent HTTP/1.1\r\n\r\n"));
  r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == 500);
  error_of(*r);
}

TEST_CASE("server: limits answer 431, 413, 400 and close", "[http][server]") {
  server_options o = fast_opts();
  o.limits.max_header_bytes = 1024;
  o.limits.max_body_bytes = 1000;
  test_server s(basic_routes(), o);
  SECTION("431") {
    client c(s.port());
    REQUIRE(c.send("GET /health HTTP/1.1\r\nX-Big: " + std::string(2000, 'b') + "\r\n\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 431);
    CHECK(*r->headers.find("connection") == "close");
    error_of(*r);
    CHECK(c.at_eof());
  }
  SECTION("413 by Content-Length") {
    client c(s.port());
    REQUIRE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 1001\r\n\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 413);
    error_of(*r);
    CHECK(c.at_eof());
  }
  SECTION("413 by chunked size, body still being sent") {
    client c(s.port());
    std::string req = "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 20; ++i) req += "64\r\n" + std::string(100, 'z') + "\r\n";
    REQUIRE(c.send(req));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 413);
  }
  SECTION("400") {
    client c(s.port());
    REQUIRE(c.send("GET /health HTTP/1.1\r\nContent-Length: nope\r\n\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(error_of(*r)["error"]["type"] == "BadRequestError");
    CHECK(c.at_eof());
  }
}

TEST_CASE("server: slow head or body -> 408; idle keep-alive closes quietly", "[http][server]") {
  test_server s(basic_routes(), fast_opts());
  SECTION("slow header") {
    client c(s.port());
    REQUIRE(c.send("GET /health HTTP/1.1\r\nHost: x\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 408);
    error_of(*r);
    CHECK(c.at_eof());
  }
  SECTION("slowloris: bytes keep coming but the head never ends") {
    client c(s.port());
    REQUIRE(c.send("GET /health HTTP/1.1\r\n"));
    for (int i = 0; i < 8; ++i) {
      std::this_thread::sleep_for(50ms);
      if (!c.send("X-A: b\r\n")) break;
    }
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 408);
  }
  SECTION("slow body") {
    client c(s.port());
    REQUIRE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 408);
  }
  SECTION("idle keep-alive") {
    client c(s.port());
    REQUIRE(c.send("GET /health HTTP/1.1\r\n\r\n"));
    CHECK(c.read_response()->status == 200);
    CHECK(c.at_eof());  // closed after idle_timeout without sending anything
  }
}

TEST_CASE("server: timeouts cover their own phase only, request after request", "[http][server]") {
  // The connection keeps one idle, one request and one send deadline and re-arms them per
  // use: none may fire in a later phase. Each phase below outlasts every timeout (100 ms):
  // a slow handler (after the idle and header timers were armed), a streamed response
  // whose pieces are 250 ms apart (after send timers), then a second request.
  router r;
  r.get("/slow", [](request&, response_writer& w) -> rt::task<void> {
    (void)co_await rt::sleep_for(*rt::loop::current(), 250ms, w.disconnected());
    co_await w.send(response::text(200, "slow done"));
  });
  r.get("/drip", [](request&, response_writer& w) -> rt::task<void> {
    w.watch_disconnect();
    if (!co_await w.begin(200, {})) co_return;
    for (int i = 0; i < 2; ++i) {
      if (!co_await w.write("drop")) co_return;
      (void)co_await rt::sleep_for(*rt::loop::current(), 250ms, w.disconnected());
    }
    (void)co_await w.end();
  });
  server_options o = fast_opts();
  o.header_timeout = o.body_timeout = o.idle_timeout = o.send_timeout = 100ms;
  test_server s(std::move(r), o);
  client c(s.port());
  for (int round = 0; round < 2; ++round) {
    REQUIRE(c.send("GET /slow HTTP/1.1\r\n\r\n"));
    auto a = c.read_response();
    REQUIRE(a);
    CHECK(a->status == 200);
    CHECK(a->body == "slow done");
    REQUIRE(c.send("GET /drip HTTP/1.1\r\n\r\n"));
    auto b = c.read_response();
    REQUIRE(b);
    CHECK(b->body == "dropdrop");
  }
  CHECK(c.at_eof());  // and the idle timeout still closes the connection afterwards
}

TEST_CASE("server: Expect 100-continue, HEAD, HTTP/1.0", "[http][server]") {
  test_server s(basic_routes(), fast_opts());
  SECTION("100-continue then the body") {
    client c(s.port());
    REQUIRE(c.send("POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 100);
    REQUIRE(c.send("hello"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->body == "hello");
  }
  SECTION("100-continue to an unknown route gets the 404 instead") {
    client c(s.port());
    REQUIRE(c.send("POST /nope HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 404);
  }
  SECTION("HEAD") {
    client c(s.port());
    REQUIRE(c.send("HEAD /health HTTP/1.1\r\n\r\n"));
    auto r = c.read_response(true);
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(*r->headers.find("content-length") == "15");
    REQUIRE(c.send("GET /echo/after HTTP/1.1\r\n\r\n"));  // no stray body bytes in between
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->body == "after");
  }
  SECTION("HTTP/1.0 closes unless keep-alive") {
    client c(s.port());
    REQUIRE(c.send("GET /health HTTP/1.0\r\n\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->version == "HTTP/1.0");
    CHECK(c.at_eof());
    client k(s.port());
    REQUIRE(k.send("GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    r = k.read_response();
    CHECK(*r->headers.find("connection") == "keep-alive");
    REQUIRE(k.send("GET /health HTTP/1.0\r\n\r\n"));
    CHECK(k.read_response()->status == 200);
  }
}

TEST_CASE("server: SSE stream events and [DONE]", "[http][server][sse]") {
  test_server s(basic_routes(), fast_opts());
  client c(s.port());
  REQUIRE(c.send("GET /sse HTTP/1.1\r\n\r\n"));
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->chunked);
  CHECK(*r->headers.find("content-type") == "text/event-stream");
  CHECK(r->body == "data: {\"i\":0}\n\ndata: {\"i\":1}\n\ndata: {\"i\":2}\n\ndata: [DONE]\n\n");
  // Keep-alive continues after a chunked stream.
  REQUIRE(c.send("GET /health HTTP/1.1\r\n\r\n"));
  CHECK(c.read_response()->status == 200);
  // HTTP/1.0: close-delimited stream.
  client old(s.port());
  REQUIRE(old.send("GET /sse HTTP/1.0\r\n\r\n"));
  r = old.read_response();
  REQUIRE(r);
  CHECK_FALSE(r->chunked);
  CHECK(r->body.find("data: [DONE]\n\n") != std::string::npos);
}

TEST_CASE("server: streaming writes suspend on a slow reader (backpressure)", "[http][server]") {
  std::atomic<int> n_written{0};
  std::atomic<bool> finished{false};
  constexpr int k_chunks = 256;
  router r;
  r.get("/flood", [&](request&, response_writer& w) -> rt::task<void> {
    if (!co_await w.begin(200, {})) co_return;
    std::string chunk(64 * 1024, 'f');
    for (int i = 0; i < k_chunks; ++i) {
      if (!co_await w.write(chunk)) co_return;
      ++n_written;
    }
    (void)co_await w.end();
    finished = true;
  });
  server_options o = fast_opts();
  o.send_timeout = 10000ms;
  test_server s(std::move(r), o, 8192);
  client c(s.port(), 8192);
  REQUIRE(c.send("GET /flood HTTP/1.1\r\n\r\n"));
  std::this_thread::sleep_for(300ms);  // not reading: the handler must be suspended
  CHECK(n_written.load() < k_chunks / 4);
  CHECK_FALSE(finished.load());
  auto resp = c.read_response();
  REQUIRE(resp);
  CHECK(resp->body.size() == std::size_t{k_chunks} * 64 * 1024);
  // The last bytes can reach us before the server thread resumes the handler after its
  // final send (a loaded machine may preempt it right there): wait for it, bounded.
  for (int i = 0; i < 400 && !finished.load(); ++i) std::this_thread::sleep_for(5ms);
  CHECK(finished.load());
}

TEST_CASE("server: a handler sees the peer disconnect", "[http][server]") {
  std::atomic<int> outcome{0};  // 1: disconnected seen, 2: slept fully
  router r;
  r.get("/wait", [&](request&, response_writer& w) -> rt::task<void> {
    w.watch_disconnect();
    auto slept = co_await rt::sleep_for(*rt::loop::current(), 10s, w.disconnected());
    outcome = slept ? 2 : 1;
    co_await w.send(response::text(200, "late"));
  });
  test_server s(std::move(r), fast_opts());
  {
    client c(s.port());
    REQUIRE(c.send("GET /wait HTTP/1.1\r\n\r\n"));
    std::this_thread::sleep_for(50ms);
  }  // closes
  for (int i = 0; i < 500 && outcome.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  CHECK(outcome.load() == 1);
}

TEST_CASE("server: drain finishes in-flight requests, closes idle ones", "[http][server][drain]") {
  test_server s(basic_routes(), fast_opts());
  client idle(s.port());
  REQUIRE(idle.send("GET /health HTTP/1.1\r\n\r\n"));
  REQUIRE(idle.read_response());
  client busy(s.port());
  REQUIRE(busy.send("GET /slow HTTP/1.1\r\n\r\n"));
  std::this_thread::sleep_for(50ms);
  s.stop_async();
  auto r = busy.read_response();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "slow done");
  CHECK(*r->headers.find("connection") == "close");
  CHECK(busy.at_eof());
  CHECK(idle.at_eof());
  s.stop();
}

TEST_CASE("server: drain timeout aborts handlers that do not finish", "[http][server][drain]") {
  std::atomic<bool> cancelled{false};
  router r;
  r.get("/forever", [&](request&, response_writer& w) -> rt::task<void> {
    auto slept = co_await rt::sleep_for(*rt::loop::current(), 60s, w.disconnected());
    cancelled = !slept;
  });
  server_options o = fast_opts();
  o.drain_timeout = 100ms;
  test_server s(std::move(r), o);
  client c(s.port());
  REQUIRE(c.send("GET /forever HTTP/1.1\r\n\r\n"));
  std::this_thread::sleep_for(50ms);
  s.stop();  // returns only when serve() has returned
  CHECK(cancelled.load());
}
