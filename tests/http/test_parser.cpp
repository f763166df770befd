// Request parser: incremental feeding, pipelining, chunked bodies, limits and statuses.
#include "catch.hpp"

#include <string>

#include "http/parser.hpp"

using namespace vks::http;

namespace {
// Feeds `data` in pieces of `step` bytes; collects complete requests; stops on error.
struct fed {
  std::vector<request> reqs;
  int error = 0;
  int n_heads = 0;
};

fed feed_all(request_parser& p, std::string_view data, std::size_t step = 1 << 20) {
  fed out;
  std::string pending;
  for (std::size_t off = 0; off < data.size(); off += step) {
    pending.append(data.substr(off, step));
    while (!pending.empty()) {
      auto s = p.feed(pending);
      pending.erase(0, s.n_consumed);
      if (s.state == parse_state::error) {
        out.error = p.error_status();
        return out;
      }
      if (s.state == parse_state::head_ready) ++out.n_heads;
      if (s.state == parse_state::complete) out.reqs.push_back(p.take());
      if (s.state == parse_state::need_more) break;
    }
  }
  return out;
}
}  // namespace

TEST_CASE("parser: simple GET with case-insensitive headers", "[http][parser]") {
  request_parser p;
  auto r = feed_all(p, "GET /v1/models?x=1 HTTP/1.1\r\nHost: a\r\nX-Thing:  v \r\n\r\n");
  REQUIRE(r.error == 0);
  REQUIRE(r.reqs.size() == 1);
  const auto& q = r.reqs[0];
  CHECK(q.method == method::get);
  CHECK(q.target == "/v1/models?x=1");
  CHECK(q.path() == "/v1/models");
  CHECK(q.query() == "x=1");
  CHECK(q.version_minor == 1);
  CHECK(q.keep_alive);
  REQUIRE(q.header("HOST"));
  CHECK(*q.header("host") == "a");
  REQUIRE(q.header("x-THING"));
  CHECK(*q.header("x-thing") == "v ");  // llhttp strips leading OWS only
  CHECK(q.body.empty());
}

TEST_CASE("parser: byte-at-a-time equals one-shot", "[http][parser]") {
  std::string req = "POST /p HTTP/1.1\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello";
  request_parser p;
  auto r = feed_all(p, req, 1);
  REQUIRE(r.reqs.size() == 1);
  CHECK(r.reqs[0].body == "hello");
  CHECK(r.reqs[0].method == method::post);
  CHECK(r.n_heads == 1);  // head first, then the body byte by byte
}

TEST_CASE("parser: pipelined requests stop after each", "[http][parser]") {
  std::string two = "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGET /c HTTP/1.1\r\n\r\n";
  request_parser p;
  auto s = p.feed(two);
  CHECK(s.state == parse_state::complete);
  std::size_t used = s.n_consumed;
  CHECK(p.take().target == "/a");
  CHECK(std::string_view(two).substr(used).substr(0, 4) == "POST");
  request_parser p2;
  auto r = feed_all(p2, two);
  REQUIRE(r.reqs.size() == 3);
  CHECK(r.reqs[1].body == "hi");
  CHECK(r.reqs[2].target == "/c");
}

TEST_CASE("parser: chunked body is decoded", "[http][parser]") {
  std::string req = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";
  for (std::size_t step : {1u, 3u, 1000u}) {
    request_parser p;
    auto r = feed_all(p, req, step);
    REQUIRE(r.error == 0);
    REQUIRE(r.reqs.size() == 1);
    CHECK(r.reqs[0].body == "hello world");
  }
}

TEST_CASE("parser: limits map to statuses", "[http][parser]") {
  SECTION("header section too large -> 431") {
    request_parser p(parse_limits{.max_header_bytes = 256});
    auto r = feed_all(p, "GET / HTTP/1.1\r\nX-Big: " + std::string(400, 'a') + "\r\n\r\n", 7);
    CHECK(r.error == 431);
  }
  SECTION("too many header fields -> 431") {
    request_parser p(parse_limits{.max_headers = 4});
    std::string req = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 6; ++i) req += "X-" + std::to_string(i) + ": v\r\n";
    CHECK(feed_all(p, req + "\r\n").error == 431);
  }
  SECTION("Content-Length over limit -> 413 before the body") {
    request_parser p(parse_limits{.max_body_bytes = 10});
    CHECK(feed_all(p, "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n").error == 413);
  }
  SECTION("chunked body over limit -> 413") {
    request_parser p(parse_limits{.max_body_bytes = 8});
    CHECK(feed_all(p, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n").error == 413);
  }
  SECTION("body exactly at the limit is fine") {
    request_parser p(parse_limits{.max_body_bytes = 5});
    auto r = feed_all(p, "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
    CHECK(r.error == 0);
    CHECK(r.reqs.size() == 1);
  }
  SECTION("default body limit is 16 MiB") { CHECK(parse_limits{}.max_body_bytes == 16u * 1024 * 1024); }
}

TEST_CASE("parser: malformed requests -> 400", "[http][parser]") {
  for (std::string bad : {"GET / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", "G@T / HTTP/1.1\r\n\r\n",
                          "GET / HTTP/1.1\r\nBad Header: x\r\n\r\n",
                          "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                          "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                          "\x01\x02\x03garbage"}) {
    request_parser p;
    INFO(bad);
    auto r = feed_all(p, bad);
    CHECK(r.error == 400);
    CHECK_FALSE(p.error_message().empty());
    // Stays in the error state.
    CHECK(p.feed("GET / HTTP/1.1\r\n\r\n").state == parse_state::error);
  }
}

TEST_CASE("parser: versions, keep-alive, Expect, HEAD", "[http][parser]") {
  SECTION("HTTP/1.0 defaults to close; keep-alive header keeps it") {
    request_parser p;
    auto r = feed_all(p, "GET / HTTP/1.0\r\n\r\n");
    REQUIRE(r.reqs.size() == 1);
    CHECK_FALSE(r.reqs[0].keep_alive);
    CHECK(r.reqs[0].version_minor == 0);
    request_parser p2;
    r = feed_all(p2, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    CHECK(r.reqs[0].keep_alive);
  }
  SECTION("Connection: close") {
    request_parser p;
    auto r = feed_all(p, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    CHECK_FALSE(r.reqs[0].keep_alive);
  }
  SECTION("Expect: 100-continue is reported at head_ready") {
    request_parser p;
    std::string_view req = "POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n";
    auto s = p.feed(req);
    REQUIRE(s.state == parse_state::head_ready);
    CHECK(p.current().expect_continue);
    CHECK(s.n_consumed == req.size());
    CHECK(p.feed("abc").state == parse_state::complete);
    CHECK(p.take().body == "abc");
  }
  SECTION("unknown Expect -> 417") {
    request_parser p;
    CHECK(feed_all(p, "GET / HTTP/1.1\r\nExpect: magic\r\n\r\n").error == 417);
  }
  SECTION("HTTP/2.0 request line -> error") {
    request_parser p;
    CHECK(feed_all(p, "GET / HTTP/2.0\r\n\r\n").error != 0);
  }
  SECTION("HEAD") {
    request_parser p;
    auto r = feed_all(p, "HEAD /health HTTP/1.1\r\n\r\n");
    CHECK(r.reqs[0].method == method::head);
  }
  SECTION("truncated request is detectable") {
    request_parser p;
    CHECK_FALSE(p.mid_request());
    CHECK(p.feed("GET / HT").state == parse_state::need_more);
    CHECK(p.mid_request());
  }
}

TEST_CASE("parser: a recycled request leaves nothing in the next one", "[http][parser]") {
  request_parser p;
  auto a = feed_all(p, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Long-Header-Name: "
                       "a value longer than the small-string buffer\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello");
  REQUIRE(a.reqs.size() == 1);
  CHECK(a.reqs[0].expect_continue);
  p.recycle(std::move(a.reqs[0]));
  auto b = feed_all(p, "GET /health HTTP/1.1\r\n\r\n");
  REQUIRE(b.reqs.size() == 1);
  const request& r = b.reqs[0];
  CHECK(r.method == method::get);
  CHECK(r.target == "/health");
  CHECK(r.headers.empty());
  CHECK(r.body.empty());
  CHECK_FALSE(r.expect_continue);
  CHECK(r.params.empty());
  p.recycle(std::move(b.reqs[0]));  // a second round from the recycled buffers
  auto c = feed_all(p, "PUT /x HTTP/1.1\r\nA: 1\r\nContent-Length: 2\r\n\r\nok");
  REQUIRE(c.reqs.size() == 1);
  CHECK(c.reqs[0].target == "/x");
  CHECK(c.reqs[0].headers.size() == 2);
  CHECK(c.reqs[0].body == "ok");
}
