// OTLP pieces that need no network: W3C traceparent parsing, endpoint URLs, and the
// ExportTraceServiceRequest JSON of a span with its phases.
#include "catch.hpp"

#include <nlohmann/json.hpp>

#include "server/otlp.hpp"

using namespace vks::server;

TEST_CASE("otlp: traceparent parsing follows W3C trace-context", "[server][otlp]") {
  auto p = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  REQUIRE(p);
  CHECK(p->trace[0] == 0x4b);
  CHECK(p->trace[15] == 0x36);
  CHECK(p->parent[0] == 0x00);
  CHECK(p->parent[7] == 0xb7);
  CHECK(p->flags == 1);
  CHECK_FALSE(parse_traceparent(""));
  CHECK_FALSE(parse_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));  // upper case
  CHECK_FALSE(parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));  // zero trace
  CHECK_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));  // zero parent
  CHECK_FALSE(parse_traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));  // version ff
  CHECK_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"));  // v00 + extra
  CHECK(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"));   // future version
  CHECK_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01"));
}

TEST_CASE("otlp: endpoint URLs", "[server][otlp]") {
  auto a = parse_otlp_endpoint("http://127.0.0.1:4318");
  REQUIRE(a);
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 4318);
  CHECK(a->path == "/v1/traces");
  auto b = parse_otlp_endpoint("http://localhost:9/custom/v1/traces");
  REQUIRE(b);
  CHECK(b->port == 9);
  CHECK(b->path == "/custom/v1/traces");
  auto c = parse_otlp_endpoint("http://[::1]:5000/");
  REQUIRE(c);
  CHECK(c->host == "::1");
  CHECK(c->path == "/v1/traces");
  CHECK(parse_otlp_endpoint("http://10.0.0.1")->port == 4318);
  CHECK_FALSE(parse_otlp_endpoint("https://collector:4318"));
  CHECK_FALSE(parse_otlp_endpoint("http://:4318"));
  CHECK_FALSE(parse_otlp_endpoint("http://h:99999"));
  CHECK_FALSE(parse_otlp_endpoint("http://h:12a"));
  CHECK_FALSE(parse_otlp_endpoint("http://h:1/a b"));
}

TEST_CASE("otlp: a span and its phases as ExportTraceServiceRequest JSON", "[server][otlp]") {
  request_span s;
  s.trace = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")->trace;
  s.parent = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")->parent;
  s.id = new_span_id();
  s.name = "chat m";
  s.start_ns = 1000;
  s.end_ns = 5000;
  s.model = "m";
  s.request_id = "chatcmpl-1";
  s.prompt_tokens = 12;
  s.completion_tokens = 3;
  s.phases = {{"queue", 1100, 1200}, {"prefill", 1200, 2000}, {"decode", 2000, 5000}};
  auto j = nlohmann::json::parse(otlp_json(std::span(&s, 1), "svc"));
  const auto& rs = j["resourceSpans"][0];
  CHECK(rs["resource"]["attributes"][0]["key"] == "service.name");
  CHECK(rs["resource"]["attributes"][0]["value"]["stringValue"] == "svc");
  const auto& spans = rs["scopeSpans"][0]["spans"];
  REQUIRE(spans.size() == 4);
  const auto& top = spans[0];
  CHECK(top["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(top["parentSpanId"] == "00f067aa0ba902b7");
  CHECK(top["spanId"].get<std::string>().size() == 16);
  CHECK(top["kind"] == 2);
  CHECK(top["startTimeUnixNano"] == "1000");
  CHECK(top["endTimeUnixNano"] == "5000");
  CHECK(top["status"]["code"] == 1);
  bool saw_input = false;
  for (const auto& a : top["attributes"])
    if (a["key"] == "gen_ai.usage.input_tokens") saw_input = a["value"]["intValue"] == "12";
  CHECK(saw_input);
  for (int i = 1; i < 4; ++i) {
    CHECK(spans[i]["parentSpanId"] == top["spanId"]);
    CHECK(spans[i]["traceId"] == top["traceId"]);
    CHECK(spans[i]["kind"] == 1);
  }
  CHECK(spans[1]["name"] == "queue");
  CHECK(spans[3]["name"] == "decode");
  s.error = "boom";
  auto k = nlohmann::json::parse(otlp_json(std::span(&s, 1), "svc"));
  CHECK(k["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["status"]["code"] == 2);
}
