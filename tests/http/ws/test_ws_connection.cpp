// ws_connection over real loopback sockets through the HTTP server's upgrade path (runs
// once per rt backend): handshake, the bytes that follow the handshake in the same segment,
// echo of text/binary, fragmented requests with pings in between, pings answered while the
// application streams, the close handshake from either side, protocol errors with their
// close codes, peer disconnect stopping the application, drain; the limits: assembly and
// idle timeouts, the process-wide buffered-bytes budget.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "../client.hpp"
#include "http/websocket.hpp"
#include "http/ws_handshake.hpp"
#include "rt/io.hpp"
#include "ws_client.hpp"

using namespace vks;
using namespace vks::http;
using vks::http::test::ws_client;

namespace {

std::atomic<bool> g_stop_stream{false};
std::atomic<int> g_n_app_done{0};
std::atomic<int> g_n_stream_cancelled{0};

// "stream": chunks every 2 ms until g_stop_stream or the connection closes, then [DONE];
// "bye": close 1000; "throw": exception; anything else is echoed with its opcode.
rt::task<void> echo_app(ws_connection& c) {
  rt::loop& lp = *rt::loop::current();
  while (auto m = co_await c.receive()) {
    if (m->data == "stream") {
      for (int i = 0; !g_stop_stream.load(); ++i) {
        if (!co_await c.send_text("chunk " + std::to_string(i))) break;
        if (!co_await rt::sleep_for(lp, std::chrono::milliseconds(2), c.closing())) {
          ++g_n_stream_cancelled;
          break;
        }
      }
      (void)co_await c.send_text("[DONE]");
    } else if (m->data == "bye") {
      co_await c.close(ws_status::normal, "bye");
      break;
    } else if (m->data == "throw") {
      throw std::runtime_error("boom");
    } else {
      std::string out = "echo:" + m->data;
      if (m->binary)
        (void)co_await c.send_binary(out);
      else
        (void)co_await c.send_text(out);
    }
  }
  ++g_n_app_done;
}

ws_options small_options() {
  ws_options o;
  o.max_message_bytes = 4096;
  o.max_queued_messages = 4;
  o.close_timeout = std::chrono::milliseconds(2000);
  return o;
}

// Short timeouts (assembly, idle) and a tiny process-wide budget for the limit tests.
http::server_budget g_ws_budget(0, 3000);

ws_options timeout_options() {
  ws_options o = small_options();
  o.assembly_timeout = std::chrono::milliseconds(200);
  o.idle_timeout = std::chrono::milliseconds(600);
  return o;
}

ws_options budget_options() {
  ws_options o = small_options();
  o.budget = &g_ws_budget;
  return o;
}

router ws_routes() {
  router r;
  r.get("/ws-timeouts", [](request& req, response_writer& w) -> rt::task<void> {
    co_await accept_websocket(req, w, timeout_options(), &echo_app);
  });
  r.get("/ws-budget", [](request& req, response_writer& w) -> rt::task<void> {
    co_await accept_websocket(req, w, budget_options(), &echo_app);
  });
  r.get("/ws", [](request& req, response_writer& w) -> rt::task<void> {
    co_await accept_websocket(req, w, small_options(), &echo_app);
  });
  r.get("/ws/{rest...}", [](request& req, response_writer& w) -> rt::task<void> {
    co_await accept_websocket(req, w, small_options(), &echo_app);
  });
  return r;
}

struct fixture {
  http::test::test_server server{ws_routes(), server_options{}};
  fixture() {
    g_stop_stream = false;
    g_n_app_done = 0;
    g_n_stream_cancelled = 0;
  }
  // Waits (bounded) for the application coroutines to finish: an ordering check, not timing.
  void wait_apps_done(int n) {
    for (int i = 0; i < 1000 && g_n_app_done.load() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(g_n_app_done.load() == n);
  }
};

}  // namespace

TEST_CASE("ws handshake: accept key of RFC 6455 section 1.3", "[ws][handshake]") {
  CHECK(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  CHECK(ws_accept_key(" dGhlIHNhbXBsZSBub25jZQ== ") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST_CASE("ws handshake: request validation", "[ws][handshake]") {
  request req;
  req.method = method::get;
  req.headers.add("host", "x");
  req.headers.add("upgrade", "WebSocket");
  req.headers.add("connection", "keep-alive, Upgrade");
  req.headers.add("sec-websocket-version", "13");
  req.headers.add("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
  auto ok = check_ws_handshake(req);
  REQUIRE(ok.accept);
  CHECK(*ok.accept->find("sec-websocket-accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  CHECK(*ok.accept->find("upgrade") == "websocket");

  auto bad_version = req;
  bad_version.headers.set("sec-websocket-version", "8");
  auto r = check_ws_handshake(bad_version);
  REQUIRE(!r.accept);
  CHECK(r.reject.status == 400);
  CHECK(*r.reject.headers.find("sec-websocket-version") == "13");

  for (std::string key : {"", "short", "dGhlIHNhbXBsZSBub25jZQ=!", "dGhlIHNhbXBsZSBub25jZQ"}) {
    auto bad_key = req;
    bad_key.headers.set("sec-websocket-key", key);
    CHECK(check_ws_handshake(bad_key).reject.status == 400);
  }
  auto no_conn = req;
  no_conn.headers.set("connection", "keep-alive");
  CHECK(!check_ws_handshake(no_conn).accept);
  auto post = req;
  post.method = method::post;
  CHECK(check_ws_handshake(post).reject.status == 405);
  auto http10 = req;
  http10.version_minor = 0;
  CHECK(check_ws_handshake(http10).reject.status == 400);
}

TEST_CASE("ws server: upgrade, echo text and binary, frames sent with the handshake", "[ws][conn]") {
  fixture f;
  ws_client c(f.server.port());
  // The first frame travels in the same write as the upgrade request: the connection must
  // hand the already-read bytes to the WebSocket.
  std::string head = c.handshake(ws_client::upgrade_request("/ws/v1/listen?model=x"), ws_client::frame(ws_opcode::text, "first"));
  REQUIRE(head.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0) == 0);
  CHECK(head.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") != std::string::npos);
  CHECK(head.find("Connection: close") == std::string::npos);
  CHECK(c.next_text() == "echo:first");
  c.send(ws_opcode::binary, "bin");
  auto ev = c.next();
  CHECK(ev.kind == ws_event_kind::message);
  CHECK(ev.opcode == ws_opcode::binary);
  CHECK(ev.payload == "echo:bin");
  c.send_text("");
  CHECK(c.next_text() == "echo:");
  c.send_close(1000, "done");
  ev = c.next();
  CHECK(ev.kind == ws_event_kind::close);
  CHECK(ev.code == 1000);
  CHECK(c.at_eof());
  f.wait_apps_done(1);
}

TEST_CASE("ws server: a bad handshake is refused with an HTTP error", "[ws][conn]") {
  fixture f;
  ws_client c(f.server.port());
  std::string head = c.handshake(
      "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 7\r\n\r\n");
  CHECK(head.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(head.find("Sec-WebSocket-Version: 13") != std::string::npos);
  ws_client c2(f.server.port());
  head = c2.handshake("GET /nowhere HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  CHECK(head.rfind("HTTP/1.1 404 ", 0) == 0);
}

TEST_CASE("ws server: fragmented message with pings in between; pong echoes the payload", "[ws][conn]") {
  fixture f;
  ws_client c(f.server.port());
  REQUIRE(c.upgrade("/ws"));
  c.send(ws_opcode::text, "{\"a\":", false);
  c.send(ws_opcode::ping, "p-1");
  c.send(ws_opcode::continuation, "[1,", false);
  c.send(ws_opcode::ping, "");
  c.send(ws_opcode::continuation, "2]}", true);
  auto ev = c.next();
  CHECK(ev.kind == ws_event_kind::pong);
  CHECK(ev.payload == "p-1");
  ev = c.next();
  CHECK(ev.kind == ws_event_kind::pong);
  CHECK(ev.payload.empty());
  ev = c.next();
  CHECK(ev.kind == ws_event_kind::message);
  CHECK(ev.opcode == ws_opcode::text);
  CHECK(ev.payload == "echo:{\"a\":[1,2]}");
}

TEST_CASE("ws server: pings are answered while the application streams", "[ws][conn]") {
  fixture f;
  ws_client c(f.server.port());
  REQUIRE(c.upgrade("/ws"));
  c.send_text("stream");
  CHECK(c.next_text() == "chunk 0");
  c.send(ws_opcode::ping, "mid-generation");
  // The stream only ends when we say so, so the pong must arrive while it is running.
  ws_event ev;
  int n_chunks = 0;
  for (;;) {
    ev = c.next();
    if (ev.kind != ws_event_kind::message) break;
    ++n_chunks;
  }
  CHECK(ev.kind == ws_event_kind::pong);
  CHECK(ev.payload == "mid-generation");
  g_stop_stream = true;
  std::string last;
  do last = c.next_text();
  while (last.rfind("chunk ", 0) == 0);
  CHECK(last == "[DONE]");
  c.send_text("after");
  CHECK(c.next_text() == "echo:after");
}

TEST_CASE("ws server: many pipelined messages are answered in order", "[ws][conn]") {
  fixture f;
  ws_client c(f.server.port());
  REQUIRE(c.upgrade("/ws"));
  std::string all;
  for (int i = 0; i < 200; ++i) all += ws_client::frame(ws_opcode::text, "m" + std::to_string(i));
  c.send_raw(all);
  for (int i = 0; i < 200; ++i) REQUIRE(c.next_text() == "echo:m" + std::to_string(i));
}

TEST_CASE("ws server: the application closes; the client's reply ends the connection", "[ws][conn]") {
  fixture f;
  ws_client c(f.server.port());
  REQUIRE(c.upgrade("/ws"));
  c.send_text("bye");
  auto ev = c.next();
  CHECK(ev.kind == ws_event_kind::close);
  CHECK(ev.code == 1000);
  CHECK(ev.payload == "bye");
  c.send_close(1000);
  CHECK(c.at_eof());
  f.wait_apps_done(1);
}

TEST_CASE("ws server: protocol errors close with their codes", "[ws][conn]") {
  fixture f;
  struct bad_case {
    std::string bytes;
    std::uint16_t code;
  };
  std::string unmasked;
  append_ws_frame(unmasked, ws_opcode::text, "hi");
  std::vector<bad_case> cases{
      {unmasked, ws_status::protocol_error},
      {ws_client::frame(ws_opcode::text, "\xff\xfe"), ws_status::invalid_payload},
      {ws_client::frame(ws_opcode::binary, std::string(5000, 'x')), ws_status::message_too_big},
      {ws_client::frame(ws_opcode::continuation, "x"), ws_status::protocol_error},
      {std::string("\x83\x80\x01\x02\x03\x04", 6), ws_status::protocol_error},
      {ws_client::frame(ws_opcode::close, "\x03\xed"), ws_status::protocol_error},  // 1005 is not sendable
  };
  for (const auto& bc : cases) {
    ws_client c(f.server.port());
    REQUIRE(c.upgrade("/ws"));
    c.send_raw(bc.bytes);
    auto ev = c.next();
    CHECK(ev.kind == ws_event_kind::close);
    CHECK(ev.code == bc.code);
    CHECK(!ev.payload.empty());
    CHECK(c.at_eof());
  }
  f.wait_apps_done(static_cast<int>(cases.size()));
}

TEST_CASE("ws server: an application exception closes with 1011", "[ws][conn]") {
  fixture f;
  ws_client c(f.server.port());
  REQUIRE(c.upgrade("/ws"));
  c.send_text("throw");
  auto ev = c.next();
  CHECK(ev.kind == ws_event_kind::close);
  CHECK(ev.code == ws_status::internal_error);
}

TEST_CASE("ws server: a vanished peer stops the application's work", "[ws][conn]") {
  fixture f;
  {
    ws_client c(f.server.port());
    REQUIRE(c.upgrade("/ws"));
    c.send_text("stream");
    CHECK(c.next_text() == "chunk 0");
    c.shutdown_now();
  }
  // The stream never ends by itself (g_stop_stream stays false): only the disconnect does.
  f.wait_apps_done(1);
}

TEST_CASE("ws server: drain sends close 1001 to an idle connection", "[ws][conn][drain]") {
  fixture f;
  ws_client c(f.server.port());
  REQUIRE(c.upgrade("/ws"));
  c.send_text("x");
  CHECK(c.next_text() == "echo:x");
  f.server.stop_async();
  auto ev = c.next();
  CHECK(ev.kind == ws_event_kind::close);
  CHECK(ev.code == ws_status::going_away);
  c.send_close(1001);
  CHECK(c.at_eof());
  f.server.stop();
}

TEST_CASE("ws server: a message not completed within the assembly timeout closes with 1008", "[ws][conn][limits]") {
  fixture f;
  SECTION("a fragmented message that never ends") {
    ws_client c(f.server.port());
    REQUIRE(c.upgrade("/ws-timeouts"));
    c.send(ws_opcode::text, "part", false);
    c.send(ws_opcode::ping, "p");  // control frames do not complete the message
    auto ev = c.next();
    CHECK(ev.kind == ws_event_kind::pong);
    ev = c.next();
    CHECK(ev.kind == ws_event_kind::close);
    CHECK(ev.code == ws_status::policy_violation);
  }
  SECTION("half a frame") {
    ws_client c(f.server.port());
    REQUIRE(c.upgrade("/ws-timeouts"));
    std::string fr = ws_client::frame(ws_opcode::text, std::string(100, 'x'));
    c.send_raw(fr.substr(0, 50));
    auto ev = c.next();
    CHECK(ev.kind == ws_event_kind::close);
    CHECK(ev.code == ws_status::policy_violation);
  }
  SECTION("complete messages keep the connection (the timeout restarts per message)") {
    ws_client c(f.server.port());
    REQUIRE(c.upgrade("/ws-timeouts"));
    for (int i = 0; i < 6; ++i) {  // 6 x 60 ms: longer than one assembly timeout in all
      c.send(ws_opcode::text, "a", false);
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      c.send(ws_opcode::continuation, "b", true);
      CHECK(c.next_text() == "echo:ab");
    }
  }
}

TEST_CASE("ws server: a connection idle past the idle timeout closes with 1001", "[ws][conn][limits]") {
  fixture f;
  ws_client c(f.server.port());
  REQUIRE(c.upgrade("/ws-timeouts"));
  c.send_text("x");
  CHECK(c.next_text() == "echo:x");
  auto ev = c.next();
  CHECK(ev.kind == ws_event_kind::close);
  CHECK(ev.code == ws_status::going_away);
  CHECK(ev.payload == "idle timeout");
}

TEST_CASE("ws server: messages over the process-wide budget close with 1013", "[ws][conn][limits]") {
  fixture f;
  {
    ws_client a(f.server.port());
    REQUIRE(a.upgrade("/ws-budget"));
    a.send(ws_opcode::binary, std::string(2000, 'a'), false);  // held: 2000 of 3000
    a.send(ws_opcode::ping, "sync");
    CHECK(a.next().kind == ws_event_kind::pong);  // the fragment has been read
    for (int i = 0; i < 500 && g_ws_budget.n_buffered_bytes() != 2000; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(g_ws_budget.n_buffered_bytes() == 2000);
    ws_client b(f.server.port());
    REQUIRE(b.upgrade("/ws-budget"));
    b.send(ws_opcode::binary, std::string(1500, 'b'), false);
    auto ev = b.next();
    CHECK(ev.kind == ws_event_kind::close);
    CHECK(ev.code == ws_status::try_again_later);
    a.send(ws_opcode::continuation, "z", true);  // the first one still completes
    auto m = a.next();
    CHECK(m.kind == ws_event_kind::message);
    CHECK(m.payload.size() == 2006);  // "echo:" + 2001
  }
  f.wait_apps_done(2);
  CHECK(g_ws_budget.n_buffered_bytes() == 0);
}
