// The bounded JSON reader (api/json_parse.hpp): caps on nesting, values and members are
// refused as 400s before a deep tree exists; wide objects parse in linear time; ordinary
// texts, duplicate keys and malformed texts come out exactly as json::parse gives them; and
// every parse of request or generated JSON goes through it (the request parsers below).
#include "catch.hpp"

#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/errors.hpp"
#include "api/invocations.hpp"
#include "api/json_parse.hpp"
#include "api/tool_calls.hpp"

using namespace vks;
using namespace vks::api;

namespace {

std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// {"a":{"a":...{"a":1}...}} with `depth` objects.
std::string nested_objects(std::size_t depth) {
  std::string s;
  s.reserve(depth * 6 + 1);
  for (std::size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += '1';
  s.append(depth, '}');
  return s;
}

std::string wide_object(std::size_t n) {
  std::string s = "{";
  for (std::size_t i = 0; i < n; ++i) s += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  return s + "}";
}

void check_cap(const result<json>& r, const std::string& message) {
  REQUIRE(!r.ok());
  CHECK(r.error().code == errc::invalid_argument);
  CHECK(http_status(r.error().code) == 400);
  CHECK(r.error().message == message);
}

// parse_json must give what json::parse gives: the same values and the same key order.
void check_same_as_nlohmann(const std::string& text) {
  INFO(text);
  auto r = parse_json(text);
  REQUIRE(r.ok());
  const json expected = json::parse(text);
  CHECK(*r == expected);
  CHECK(r->dump() == expected.dump());
}

}  // namespace

TEST_CASE("json: depth 10^6 is refused before a tree is built (arrays, objects, unclosed)") {
  check_cap(parse_json(nested_arrays(1'000'000)), "JSON nesting exceeds 128 levels");
  check_cap(parse_json(nested_objects(1'000'000)), "JSON nesting exceeds 128 levels");
  check_cap(parse_json(std::string(1'000'000, '[')), "JSON nesting exceeds 128 levels");
  check_cap(parse_json_body("{\"messages\":" + nested_arrays(1'000'000) + "}"), "JSON nesting exceeds 128 levels");
  CHECK(parse_json_or_discarded(nested_arrays(1'000'000)).is_discarded());
}

TEST_CASE("json: exactly at the nesting limit parses, one more level is refused") {
  auto r = parse_json(nested_arrays(128));
  REQUIRE(r.ok());
  std::size_t depth = 0;
  for (const json* p = &*r; p->is_array(); p = p->empty() ? nullptr : &(*p)[0]) {
    ++depth;
    if (p->empty()) break;
  }
  CHECK(depth == 128);
  check_cap(parse_json(nested_arrays(129)), "JSON nesting exceeds 128 levels");
  CHECK(parse_json(nested_objects(128)).ok());
  check_cap(parse_json(nested_objects(129)), "JSON nesting exceeds 128 levels");
  CHECK(parse_json("1").ok());  // scalars have depth 0
  json_limits lim;
  lim.max_depth = 2;
  CHECK(parse_json("[{}]", lim).ok());
  check_cap(parse_json("[{\"a\":[]}]", lim), "JSON nesting exceeds 2 levels");
}

TEST_CASE("json: 100k keys parse in order; one more member is refused") {
  auto r = parse_json(wide_object(100'000));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 100'000);
  const auto o = r->get_ref<const json::object_t&>().begin();
  CHECK(o[0].first == "k0");
  CHECK(o[54'321].first == "k54321");
  CHECK(o[54'321].second == 54'321);
  CHECK(o[99'999].first == "k99999");
  check_cap(parse_json(wide_object(100'001)), "JSON object has more than 100000 members");
}

TEST_CASE("json: the total number of values is capped") {
  std::string a = "[";
  for (std::size_t i = 0; i < 999'999; ++i) a += i ? ",0" : "0";
  a += "]";
  auto r = parse_json(a);  // the array and 999,999 numbers: 1,000,000 values
  REQUIRE(r.ok());
  CHECK(r->size() == 999'999);
  a.insert(a.size() - 1, ",0");
  check_cap(parse_json(a), "JSON text has more than 1000000 values");
  json_limits lim;
  lim.max_values = 3;
  CHECK(parse_json("{\"a\":[1]}", lim).ok());
  check_cap(parse_json("{\"a\":[1,2]}", lim), "JSON text has more than 3 values");
}

TEST_CASE("json: duplicate keys keep the first position and the last value, as json::parse does") {
  auto r = parse_json(R"({"a":1,"b":2,"a":3})");
  REQUIRE(r.ok());
  CHECK(r->dump() == R"({"a":3,"b":2})");
  check_same_as_nlohmann(R"({"a":1,"b":2,"a":3})");
  check_same_as_nlohmann(R"({"a":{"x":[1,2]},"b":2,"a":[3],"c":{"d":1,"d":{"e":null}}})");
  check_same_as_nlohmann(R"({"a":[1],"a":"s","a":{"z":1,"y":2,"z":3}})");
  // Past the scan threshold the hash index finds the duplicates.
  std::string wide = wide_object(40);
  wide.insert(wide.size() - 1, R"(,"k3":"again","k39":[true],"new":1,"k0":{"x":0})");
  check_same_as_nlohmann(wide);
  // Duplicates do not count as members.
  json_limits lim;
  lim.max_members = 2;
  CHECK(parse_json(R"({"a":1,"b":2,"a":3,"b":4})", lim).ok());
  check_cap(parse_json(R"({"a":1,"b":2,"c":3})", lim), "JSON object has more than 2 members");
}

TEST_CASE("json: ordinary texts parse exactly as before") {
  const std::vector<std::string> texts = {
      R"({"model":"m","messages":[{"role":"user","content":"Hi \u00e9\ud83d\ude00 \"q\" \n"}],"max_tokens":16})",
      R"({"prompt":[[1,2,3],[4]],"temperature":0.7,"top_p":1e-3,"seed":18446744073709551615,"n":-1})",
      R"({"a":null,"b":true,"c":false,"d":[],"e":{},"f":"","g":1.5e300,"h":-0.0,"i":12345678901234567890})",
      R"( [ 1 , "x" , { "k" : [ { } ] } ] )",
      R"("just a string")",
      "42",
      R"({"z":1,"y":2,"x":{"c":3,"b":2,"a":1}})",
  };
  for (const auto& t : texts) check_same_as_nlohmann(t);
}

TEST_CASE("json: malformed texts fail with json::parse's message") {
  const std::vector<std::string> texts = {"{\"a\": ", "[1,]", "{} x", "{\"a\" 1}", "1e999", "[\"\\ud800\"]",
                                          "{'a':1}", "nul", "[1 2]", "// c\n{}"};
  for (const auto& t : texts) {
    INFO(t);
    auto r = parse_json(t);
    REQUIRE(!r.ok());
    CHECK(r.error().code == errc::invalid_argument);
    std::string expected;
    try {
      const json unused = json::parse(t);
    } catch (const json::exception& e) {
      expected = std::string("JSON decode error: ") + e.what();
    }
    CHECK(r.error().message == expected);
  }
}

TEST_CASE("json: JSON-in-a-string request fields and generated tool calls go through the caps") {
  parse_limits lim;
  lim.n_vocab = 1000;
  lim.max_model_len = 4096;
  // guided_json given as a string, nested 10^6 deep.
  json body = {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  body["guided_json"] = nested_objects(1'000'000);
  auto r = parse_chat_request(body, lim);
  REQUIRE(!r.ok());
  CHECK(r.error().message == "guided_json: JSON nesting exceeds 128 levels");
  CHECK(r.error().param == "guided_json");
  // Tool-call arguments given as a string, nested deep: kept as the string, not parsed.
  json msgs = json::array({{{"role", "user"}, {"content", "hi"}},
                           {{"role", "assistant"},
                            {"tool_calls", json::array({{{"id", "c1"},
                                                         {"type", "function"},
                                                         {"function", {{"name", "f"}, {"arguments", nested_arrays(1'000'000)}}}}})}}});
  body = {{"model", "m"}, {"messages", msgs}};
  (void)parse_chat_request(body, lim);  // must not overflow the stack, whatever it answers
  // A model that generates `[[[[...` as a llama3_json call: plain content, no recursion.
  tool_call_parser p(tool_call_format::llama3_json, "");
  std::string content;
  auto d = p.push(std::string(200'000, '['));
  content += d.content;
  d = p.flush();
  content += d.content;
  CHECK(d.calls.empty());
  CHECK(content == std::string(200'000, '['));
}

TEST_CASE("json: chat_template_kwargs is capped at 256 members (each one is a template variable)") {
  parse_limits lim;
  lim.n_vocab = 1000;
  lim.max_model_len = 4096;
  json body = {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  body["chat_template_kwargs"] = json::object();
  for (int i = 0; i < 256; ++i) body["chat_template_kwargs"]["k" + std::to_string(i)] = i;
  CHECK(parse_chat_request(body, lim).ok());
  body["chat_template_kwargs"]["one_more"] = true;
  auto r = parse_chat_request(body, lim);
  REQUIRE(!r.ok());
  CHECK(r.error().param == "chat_template_kwargs");
  CHECK(r.error().message == "chat_template_kwargs has more than 256 members.");
}
