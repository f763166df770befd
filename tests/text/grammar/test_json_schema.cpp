// JSON-schema, json_object and choice grammars: documents that conform are sentences,
// ones that do not are refused, and random sentences parse as conforming JSON.
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "text/grammar/json_schema.hpp"

using namespace vks::text::grammar;
using namespace vks::text::grammar::test;
using ojson = nlohmann::ordered_json;

namespace {

const std::string k_json_alphabet = [] {
  std::string a = "\n";
  for (char c = 0x20; c < 0x7f; ++c) a += c;
  return a;
}();

std::shared_ptr<const grammar> schema(const char* text, const json_grammar_options& opt = {}) {
  return must(compile_json_schema(ojson::parse(text), opt));
}

// Random sentences of g, each parsed as JSON and handed to check.
template <class F>
void walk(const std::shared_ptr<const grammar>& g, int n, F&& check) {
  std::mt19937 rng(11);
  int done = 0;
  for (int t = 0; t < n * 4 && done < n; ++t) {
    auto s = random_sentence(g, rng, k_json_alphabet, 0.5, 600);
    if (!s) continue;
    INFO("sentence: " << *s);
    auto j = ojson::parse(*s, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    check(j);
    ++done;
  }
  CHECK(done == n);
}

}  // namespace

TEST_CASE("json schema: object with required, optional and typed properties", "[grammar][json]") {
  auto g = schema(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":6},
      "age":{"type":"integer","minimum":0},
      "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3},
      "nick":{"type":["string","null"],"maxLength":3}},
    "required":["name","age"]})");
  CHECK(full(g, R"({"name":"Al","age":3})"));
  CHECK(full(g, R"({"name":"Al","age":3,"tags":["a","b"],"nick":null})"));
  CHECK(full(g, "{\n  \"name\": \"Al\",\n  \"age\": 30,\n  \"nick\": \"x\"\n}"));
  CHECK(full(g, R"( {"name":"","age":0,"tags":[]})"));
  CHECK_FALSE(full(g, R"({"age":3,"name":"Al"})"));          // schema order
  CHECK_FALSE(full(g, R"({"name":"Al"})"));                  // age is required
  CHECK_FALSE(full(g, R"({"name":"Al","age":-3})"));         // minimum 0
  CHECK_FALSE(full(g, R"({"name":"Al","age":3.5})"));
  CHECK_FALSE(full(g, R"({"name":"Al","age":3,"x":1})"));    // no other members
  CHECK_FALSE(full(g, R"({"name":"Al","age":3,})"));
  CHECK_FALSE(full(g, R"({"name":"toolong","age":3})"));     // maxLength 6
  CHECK_FALSE(full(g, R"({"name":"Al","age":3,"tags":["c"]})"));
  CHECK_FALSE(full(g, R"({"name":"Al","age":3,"tags":["a","a","a","a"]})"));
  CHECK_FALSE(full(g, R"({"name":"Al","age":01})"));
  walk(g, 40, [](const ojson& j) {
    REQUIRE(j.is_object());
    REQUIRE(j.contains("name"));
    REQUIRE(j.contains("age"));
    CHECK(j["name"].is_string());
    std::size_t n_chars = 0;  // code points, as maxLength counts
    for (char c : j["name"].get<std::string>()) n_chars += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
    CHECK(n_chars <= 6);
    CHECK(j["age"].is_number_integer());
    CHECK(j["age"].get<long long>() >= 0);
    for (auto it = j.begin(); it != j.end(); ++it)
      CHECK((it.key() == "name" || it.key() == "age" || it.key() == "tags" || it.key() == "nick"));
    if (j.contains("tags")) {
      CHECK(j["tags"].size() <= 3);
      for (const auto& t : j["tags"]) CHECK((t == "a" || t == "b"));
    }
    if (j.contains("nick")) CHECK((j["nick"].is_null() || j["nick"].is_string()));
  });
}

TEST_CASE("json schema: $ref recursion, anyOf, const, nullable, tuples, formats", "[grammar][json]") {
  auto tree = schema(R"({"$defs":{"node":{"type":"object","properties":{
      "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},
    "$ref":"#/$defs/node"})");
  CHECK(full(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]})"));
  CHECK_FALSE(full(tree, R"({"v":1,"kids":[{"w":2}]})"));

  auto any_of = schema(R"({"anyOf":[{"type":"boolean"},{"const":{"k":[1,"x"]}},{"type":"number","nullable":true}]})");
  CHECK(full(any_of, "true"));
  CHECK(full(any_of, R"({"k":[1,"x"]})"));
  CHECK(full(any_of, "-1.5e+10"));
  CHECK(full(any_of, "null"));
  CHECK_FALSE(full(any_of, R"({"k":[2,"x"]})"));
  CHECK_FALSE(full(any_of, "\"s\""));

  auto tuple = schema(R"({"type":"array","prefixItems":[{"type":"string","format":"date"},{"type":"string","format":"uuid"}]})");
  CHECK(full(tuple, R"(["2024-02-29","123e4567-e89b-12d3-a456-426614174000"])"));
  CHECK_FALSE(full(tuple, R"(["2024-13-01","123e4567-e89b-12d3-a456-426614174000"])"));
  CHECK_FALSE(full(tuple, R"(["2024-02-29"])"));

  auto pat = schema(R"({"type":"object","properties":{"code":{"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"}},"required":["code"]})");
  CHECK(full(pat, R"({"code":"AB-123"})"));
  CHECK_FALSE(full(pat, R"({"code":"AB-12"})"));

  // A pattern cannot end the string: '"', '\\' and control characters leave its sets.
  auto quote = schema(R"({"type":"object","properties":{"s":{"type":"string","pattern":"[a-z\"]+|.\\n|x\"?"}},"required":["s"]})");
  CHECK(full(quote, R"({"s":"ab"})"));
  CHECK(full(quote, R"({"s":"x"})"));
  CHECK_FALSE(full(quote, R"({"s":"a"b"})"));
  CHECK_FALSE(full(quote, "{\"s\":\"a\n\"}"));
  CHECK_FALSE(full(quote, R"({"s":"x""})"));
  walk(quote, 20, [](const ojson& j) { CHECK(j["s"].get<std::string>().find('"') == std::string::npos); });

  auto counted = schema(R"({"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":3})");
  CHECK_FALSE(full(counted, "[true]"));
  CHECK(full(counted, "[true,false]"));
  CHECK(full(counted, "[true, false, true]"));
  CHECK_FALSE(full(counted, "[true,false,true,true]"));

  auto all_of = schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                                     {"properties":{"b":{"type":"boolean"}},"required":["b"]}]})");
  CHECK(full(all_of, R"({"a":1,"b":true})"));
  CHECK_FALSE(full(all_of, R"({"a":1})"));

  auto extra = schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
  CHECK(full(extra, R"({"a":1,"x":"y","z":""})"));
  CHECK(full(extra, R"({"x":"y"})"));
  CHECK_FALSE(full(extra, R"({"a":1,"x":2})"));
}

TEST_CASE("json schema: whitespace options", "[grammar][json]") {
  const char* s = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  json_grammar_options compact;
  compact.any_whitespace = false;
  CHECK(full(schema(s, compact), R"({"a":1})"));
  CHECK_FALSE(full(schema(s, compact), R"({"a": 1})"));
  json_grammar_options custom;
  custom.whitespace_pattern = " ?";
  CHECK(full(schema(s, custom), R"({ "a": 1 })"));
  CHECK_FALSE(full(schema(s, custom), "{\n\"a\":1}"));
  CHECK(full(schema(s), std::string("{\n") + std::string(20, ' ') + "\"a\":1\n}"));
  CHECK_FALSE(full(schema(s), std::string("{\n") + std::string(21, ' ') + "\"a\":1}"));  // indent <= 20
  CHECK_FALSE(full(schema(s), "{  \"a\":1}"));   // one space, not two
  CHECK_FALSE(full(schema(s), "{\n\n\"a\":1}"));
  json_grammar_options loose;
  loose.allow_additional_properties = true;
  CHECK(full(schema(s, loose), R"({"a":1,"b":[null]})"));
}

TEST_CASE("json_object: random sentences are JSON objects", "[grammar][json]") {
  auto g = must(json_object_grammar());
  CHECK(full(g, R"({"a":[1,{"b":null}],"c":"\u00e9\n"})"));
  CHECK_FALSE(full(g, "[1]"));
  CHECK_FALSE(full(g, R"({"a":1)"));
  CHECK_FALSE(full(g, R"({"a":"\x"})"));
  CHECK_FALSE(full(g, R"({"a":"\udbdc"})"));  // a lone surrogate
  CHECK(full(g, R"({"a":"\ud83d\ude00\u0041"})"));
  walk(g, 40, [](const ojson& j) { CHECK(j.is_object()); });
}

TEST_CASE("choice: exactly one of the strings", "[grammar][json]") {
  auto g = must(choice_grammar({"yes", "no", "maybe so"}));
  CHECK(full(g, "yes"));
  CHECK(full(g, "maybe so"));
  CHECK_FALSE(full(g, "yes no"));
  CHECK_FALSE(full(g, "\"yes\""));
  CHECK_FALSE(choice_grammar({}).ok());
}

TEST_CASE("json schema: errors", "[grammar][json]") {
  for (const char* s : {R"({"type":"strnig"})", R"({"$ref":"#/$defs/missing"})", R"(false)",
                        R"({"$ref":"http://x/y"})", R"({"enum":[]})", R"({"type":"string","pattern":"(a"})",
                        R"({"type":"string","minLength":5,"maxLength":2})", R"(3)"}) {
    INFO(s);
    auto g = compile_json_schema(ojson::parse(s));
    REQUIRE_FALSE(g.ok());
    CHECK(g.error().code == vks::errc::invalid_argument);
  }
}
