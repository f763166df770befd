// The process-wide budgets (http/budget.hpp): accounting of server_budget and budget_charge,
// and the server enforcing them over loopback sockets: a body that does not fit in the
// buffered-bytes budget is refused with 503 + Retry-After before it is read (Content-Length)
// or as it grows (chunked), charges are returned when requests end, and at the connection
// cap the accept loop pauses (a further peer waits in the backlog) until a connection closes.
#include <poll.h>

#include <chrono>
#include <thread>

#include "client.hpp"
#include "http/budget.hpp"

using namespace vks;
using namespace vks::http;
using namespace vks::http::test;
using namespace std::chrono_literals;

namespace {

router echo_routes() {
  router r;
  r.post("/echo", [](request& req, response_writer& w) -> rt::task<void> {
    co_await w.send(response::text(200, req.body));
  });
  r.get("/health", [](request&, response_writer& w) -> rt::task<void> {
    co_await w.send(response::json(200, R"({"status":"ok"})"));
  });
  return r;
}

server_options budget_opts(server_budget& b) {
  server_options o;
  o.header_timeout = 2000ms;
  o.body_timeout = 2000ms;
  o.idle_timeout = 5000ms;
  o.drain_timeout = 2000ms;
  o.budget = &b;
  return o;
}

// Polls until `pred` holds (bounded): an ordering check, not a timing one.
template <class F>
bool eventually(F pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

// A raw connected socket whose readiness the test can poll without blocking.
int connect_raw(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);  // the backlog accepts
  return fd;
}

bool readable_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

}  // namespace

TEST_CASE("budget: buffered bytes are charged up to the limit and returned", "[http][budget]") {
  server_budget b(0, 1000);
  CHECK(b.try_charge(600));
  CHECK(!b.try_charge(401));
  CHECK(b.try_charge(400));
  CHECK(!b.try_charge(1));
  CHECK(b.n_buffered_bytes() == 1000);
  b.release(1000);
  CHECK(b.n_buffered_bytes() == 0);
  CHECK(!b.try_charge(static_cast<std::size_t>(-1)));  // no wrap-around
  {
    budget_charge c(&b);
    CHECK(c.charge_to(700));
    CHECK(!c.charge_to(1001));  // refused: the charge stays
    CHECK(c.n_charged() == 700);
    budget_charge other(&b);
    CHECK(!other.charge_to(301));
    CHECK(c.charge_to(200));  // lowering returns bytes at once
    CHECK(b.n_buffered_bytes() == 200);
    CHECK(other.charge_to(800));
    budget_charge moved = std::move(other);
    CHECK(b.n_buffered_bytes() == 1000);
  }
  CHECK(b.n_buffered_bytes() == 0);  // destruction returns everything
  server_budget unlimited(0, 0);
  CHECK(unlimited.try_charge(std::size_t{1} << 40));
  CHECK(!unlimited.at_connection_cap());
  budget_charge none;  // no budget: always succeeds
  CHECK(none.charge_to(123));
}

TEST_CASE("budget: connection count and cap", "[http][budget]") {
  server_budget b(2, 0);
  CHECK(!b.at_connection_cap());
  b.open_connection();
  b.open_connection();
  CHECK(b.at_connection_cap());
  b.close_connection();
  CHECK(!b.at_connection_cap());
  CHECK(b.n_connections() == 1);
}

TEST_CASE("server: a body over the buffered-bytes budget gets 503 + Retry-After", "[http][budget]") {
  server_budget b(0, 10'000);
  test_server s(echo_routes(), budget_opts(b));
  SECTION("by Content-Length, before the body is sent") {
    client c(s.port());
    REQUIRE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 10001\r\n\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(*r->headers.find("retry-after") == "1");
    CHECK(r->body.find("ServiceUnavailableError") != std::string::npos);
    CHECK(c.at_eof());
  }
  SECTION("by chunked size, body still being sent") {
    client c(s.port());
    std::string req = "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 120; ++i) req += "64\r\n" + std::string(100, 'z') + "\r\n";
    (void)c.send(req);  // the server may close before taking it all
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 503);
  }
  SECTION("bodies held by other requests count; their end returns the bytes") {
    // Two bodies are in flight (heads sent, bodies pending): 6000 + 4000 fill the budget.
    client a(s.port()), bb(s.port());
    REQUIRE(a.send("POST /echo HTTP/1.1\r\nContent-Length: 6000\r\n\r\n" + std::string(10, 'a')));
    REQUIRE(eventually([&] { return b.n_buffered_bytes() == 6000; }));
    REQUIRE(bb.send("POST /echo HTTP/1.1\r\nContent-Length: 4000\r\n\r\n"));
    REQUIRE(eventually([&] { return b.n_buffered_bytes() == 10'000; }));
    client c(s.port());
    REQUIRE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 1\r\n\r\nx"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 503);
    REQUIRE(a.send(std::string(5990, 'a')));
    auto ra = a.read_response();
    REQUIRE(ra);
    CHECK(ra->status == 200);
    CHECK(ra->body.size() == 6000);
    CHECK(eventually([&] { return b.n_buffered_bytes() == 4000; }));
    client d(s.port());
    REQUIRE(d.send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"));
    auto rd = d.read_response();
    REQUIRE(rd);
    CHECK(rd->status == 200);
    bb.close();  // a peer that vanishes mid-body returns its reservation
    CHECK(eventually([&] { return b.n_buffered_bytes() == 0; }));
  }
}

TEST_CASE("server: at the connection cap, accepting pauses until a connection closes", "[http][budget]") {
  server_budget b(2, 0);
  test_server s(echo_routes(), budget_opts(b));
  client a(s.port()), c2(s.port());
  for (client* c : {&a, &c2}) {
    REQUIRE(c->send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto r = c->read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
  }
  CHECK(b.n_connections() == 2);
  int fd = connect_raw(s.port());
  const std::string req = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  CHECK(!readable_within(fd, 300));  // not accepted: no answer, no reset
  CHECK(b.n_connections() == 2);
  a.close();
  CHECK(readable_within(fd, 5000));  // a slot freed: accepted and answered
  char buf[256];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  REQUIRE(n > 12);
  CHECK(std::string_view(buf, 12) == "HTTP/1.1 200");
  ::close(fd);
  c2.close();
  CHECK(eventually([&] { return b.n_connections() == 0; }));
}
