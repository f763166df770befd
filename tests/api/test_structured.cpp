// Structured output requests (checklist 44): every spelling reaches one constraint with its
// options, type errors and bad schemas/regexes/grammars are 400s naming the field, two
// kinds at once are refused, and the compiled grammar constrains as asked.
#include "catch.hpp"

#include "api/chat_request.hpp"
#include "api/completion_request.hpp"
#include "api/errors.hpp"
#include "api/invocations.hpp"
#include "api/structured.hpp"
#include "text/grammar/grammar.hpp"
#include "text/grammar/matcher.hpp"

using namespace vks;
using namespace vks::api;

namespace {

result<chat_request> parse(const std::string& extra) {
  auto j = parse_json_body(R"({"messages":[{"role":"user","content":"hi"}],)" + extra + "}");
  if (!j) return fail(j.error());
  return parse_chat_request(*j);
}

// The request's grammar accepts `text` as a whole sentence.
bool accepts(const chat_request& r, std::string_view text) {
  auto c = request_constraint(r.structured, false);
  REQUIRE(c.ok());
  REQUIRE(c->has_value());
  text::grammar::matcher m((*c)->grammar);
  return m.accept(text) && m.can_end();
}

}  // namespace

TEST_CASE("structured output: every spelling compiles and constrains") {
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  for (const std::string& extra :
       {R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":)" + schema + "}}",
        R"("structured_outputs":{"json":)" + schema + "}", R"("guided_json":)" + schema,
        R"("guided_json":")" + std::string(R"({\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]})") + "\""}) {
    INFO(extra);
    auto r = parse(extra);
    REQUIRE(r.ok());
    CHECK(accepts(*r, R"({"a": 12})"));
    CHECK_FALSE(accepts(*r, R"({"a": "x"})"));
    CHECK_FALSE(accepts(*r, R"({})"));
  }
  auto obj = parse(R"("response_format":{"type":"json_object"})");
  REQUIRE(obj.ok());
  CHECK(accepts(*obj, R"({"any":[1,2]})"));
  CHECK_FALSE(accepts(*obj, "[1]"));
  for (const char* extra : {R"("guided_regex":"[0-9]{2}x")", R"("structured_outputs":{"regex":"[0-9]{2}x"})"}) {
    auto r = parse(extra);
    REQUIRE(r.ok());
    CHECK(accepts(*r, "42x"));
    CHECK_FALSE(accepts(*r, "4x"));
  }
  for (const char* extra : {R"("guided_choice":["red","green"])", R"("structured_outputs":{"choice":["red","green"]})"}) {
    auto r = parse(extra);
    REQUIRE(r.ok());
    CHECK(accepts(*r, "green"));
    CHECK_FALSE(accepts(*r, "blue"));
  }
  for (const char* extra : {R"("guided_grammar":"root ::= \"a\" [bc]+")", R"("structured_outputs":{"grammar":"root ::= \"a\" [bc]+"})"}) {
    auto r = parse(extra);
    REQUIRE(r.ok());
    CHECK(accepts(*r, "abcb"));
    CHECK_FALSE(accepts(*r, "a"));
  }
}

TEST_CASE("structured output: whitespace and additional-properties options") {
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  auto compact = parse(R"("structured_outputs":{"json":)" + schema + R"(,"disable_any_whitespace":true})");
  REQUIRE(compact.ok());
  CHECK(accepts(*compact, R"({"a":1})"));
  CHECK_FALSE(accepts(*compact, R"({"a": 1})"));
  auto open = parse(R"("structured_outputs":{"json":)" + schema + R"(,"disable_additional_properties":false})");
  REQUIRE(open.ok());
  CHECK(accepts(*open, R"({"a":1,"b":true})"));
  auto strict = parse(R"("guided_json":)" + schema);
  REQUIRE(strict.ok());
  CHECK_FALSE(accepts(*strict, R"({"a":1,"b":true})"));
  auto pattern = parse(R"("guided_json":)" + schema + R"(,"guided_whitespace_pattern":"( {2})?")");
  REQUIRE(pattern.ok());
  CHECK(accepts(*pattern, R"({  "a":  1})"));
  CHECK_FALSE(accepts(*pattern, R"({ "a":1})"));
}

TEST_CASE("structured output: a reasoning prompt defers the constraint to the end tag") {
  auto r = parse(R"("guided_choice":["x"])");
  REQUIRE(r.ok());
  auto c = request_constraint(r->structured, true);
  REQUIRE(c.ok());
  CHECK((*c)->after == "</think>");
  auto plain = request_constraint(r->structured, false);
  REQUIRE(plain.ok());
  CHECK((*plain)->after.empty());
  auto none = request_constraint(std::nullopt, true);
  REQUIRE(none.ok());
  CHECK(!none->has_value());
}

TEST_CASE("structured output: errors") {
  struct bad_case {
    std::string extra;
    std::string param;
  };
  const bad_case parse_errors[] = {
      {R"("guided_regex":"a+","guided_choice":["a"])", "structured_outputs"},
      {R"("response_format":{"type":"json_object"},"structured_outputs":{"regex":"a"})", "structured_outputs"},
      {R"("guided_regex":5)", "guided_regex"},
      {R"("guided_choice":"a")", "guided_choice"},
      {R"("guided_choice":[])", "guided_choice"},
      {R"("guided_choice":["a",1])", "guided_choice"},
      {R"("guided_json":"{not json")", "guided_json"},
      {R"("guided_json":[1])", "guided_json"},
      {R"("structured_outputs":{"grammar":7})", "structured_outputs.grammar"},
      {R"("structured_outputs":"json")", "structured_outputs"},
      {R"("structured_outputs":{"json":{},"whitespace_pattern":3})", "structured_outputs.whitespace_pattern"},
      {R"("response_format":{"type":"json_schema"})", "response_format"},
      {R"("response_format":{"type":"xml"})", "response_format"},
  };
  for (const auto& c : parse_errors) {
    INFO(c.extra);
    auto r = parse(c.extra);
    REQUIRE(!r.ok());
    CHECK(http_status(r.error().code) == 400);
    CHECK(r.error().param == c.param);
  }
  // Well-formed requests whose constraint does not compile: 400 naming structured_outputs.
  for (const char* extra : {R"("guided_regex":"(a")", R"("guided_grammar":"root ::= missing")",
                            R"("guided_json":{"type":"strnig"})", R"("guided_json":{"$ref":"#/nowhere"})",
                            R"j("structured_outputs":{"regex":"a(?=b)"})j"}) {
    INFO(extra);
    auto r = parse(extra);
    REQUIRE(r.ok());
    auto c = request_constraint(r->structured, false);
    REQUIRE(!c.ok());
    CHECK(http_status(c.error().code) == 400);
    CHECK(c.error().param == "structured_outputs");
  }
}

TEST_CASE("structured output: structural_tag as response_format, object or JSON string") {
  const std::string tag =
      R"({"type":"structural_tag","structures":[{"begin":"<function=get_weather>",)"
      R"("schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"end":"</function>"}],)"
      R"("triggers":["<function="]})";
  json as_string = tag;
  for (const std::string& extra : {R"("response_format":)" + tag, R"("structured_outputs":{"structural_tag":)" + tag + "}",
                                   R"("structured_outputs":{"structural_tag":)" + as_string.dump() + "}"}) {
    INFO(extra);
    auto r = parse(extra);
    REQUIRE(r.ok());
    REQUIRE(r->structured);
    CHECK(r->structured->k == structured_output::kind::structural_tag);
    CHECK(accepts(*r, "Sure. <function=get_weather>{\"city\": \"Paris\"}</function> Done."));
    CHECK(accepts(*r, "No call at all"));
    CHECK_FALSE(accepts(*r, "<function=get_weather>{\"town\": \"Paris\"}</function>"));
    CHECK_FALSE(accepts(*r, "<function=set_weather>{}</function>"));
  }
  // Options of structured_outputs reach the structures' schemas.
  auto compact = parse(R"("structured_outputs":{"structural_tag":)" + tag + R"(,"disable_any_whitespace":true})");
  REQUIRE(compact.ok());
  CHECK(accepts(*compact, "<function=get_weather>{\"city\":\"x\"}</function>"));
  CHECK_FALSE(accepts(*compact, "<function=get_weather>{\"city\": \"x\"}</function>"));
  // Completions read the same fields.
  auto j = parse_json_body(R"({"prompt":"hi","response_format":)" + tag + "}");
  REQUIRE(j.ok());
  auto cr = parse_completion_request(*j);
  REQUIRE(cr.ok());
  REQUIRE(cr->structured);
  CHECK(cr->structured->k == structured_output::kind::structural_tag);
}

TEST_CASE("structured output: structural_tag errors name the member") {
  const std::string s = R"("schema":{"type":"object"})";
  struct bad_case {
    std::string extra;
    std::string param;
    int status = 400;
  };
  const bad_case cases[] = {
      {R"("response_format":{"type":"structural_tag","triggers":["<f"]})", "response_format.structures"},
      {R"("response_format":{"type":"structural_tag","structures":{},"triggers":["<f"]})", "response_format.structures"},
      {R"("response_format":{"type":"structural_tag","structures":[]})", "response_format.triggers"},
      {R"("response_format":{"type":"structural_tag","structures":[],"triggers":["a",3]})", "response_format.triggers"},
      {R"("response_format":{"type":"structural_tag","structures":[7],"triggers":["<f"]})", "response_format.structures[0]"},
      {R"("response_format":{"type":"structural_tag","structures":[{"begin":"<f>",)" + s + R"(}],"triggers":["<f"]})",
       "response_format.structures[0].end"},
      {R"("response_format":{"type":"structural_tag","structures":[{"begin":"<f>","end":"x"}],"triggers":["<f"]})",
       "response_format.structures[0].schema"},
      {R"("response_format":{"type":"structural_tag","structures":[{"begin":"<g>",)" + s + R"(,"end":""}],"triggers":["<f"]})",
       "response_format.structures[0].begin"},
      {R"("response_format":{"type":"structural_tag","structures":[],"triggers":["<f","<fun"]})", "response_format.triggers[0]"},
      {R"("response_format":{"type":"structural_tag","structures":[],"triggers":[""]})", "response_format.triggers[0]"},
      {R"("structured_outputs":{"structural_tag":"{not json"})", "structured_outputs.structural_tag"},
      {R"("structured_outputs":{"structural_tag":[1]})", "structured_outputs.structural_tag"},
      {R"("structured_outputs":{"structural_tag":{"structures":[],"triggers":[]},"regex":"a"})", "structured_outputs"},
      {R"("response_format":{"type":"structural_tag","format":{"type":"const_string","value":"x"}})", "response_format", 501},
  };
  for (const auto& c : cases) {
    INFO(c.extra);
    auto r = parse(c.extra);
    REQUIRE(!r.ok());
    CHECK(http_status(r.error().code) == c.status);
    CHECK(r.error().param == c.param);
  }
  // A structure's schema that does not compile: 400 when the constraint is built.
  auto r = parse(R"("response_format":{"type":"structural_tag","structures":[{"begin":"<f>","schema":{"type":"strnig"},)"
                 R"("end":""}],"triggers":["<f"]})");
  REQUIRE(r.ok());
  auto c = request_constraint(r->structured, false);
  REQUIRE(!c.ok());
  CHECK(http_status(c.error().code) == 400);
  CHECK(c.error().message.find("structures[0].schema") != std::string::npos);
}

TEST_CASE("tool_choice: named and required become constraints") {
  const std::string tools = R"("tools":[
      {"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}},
      {"type":"function","function":{"name":"b"}}])";
  auto named = parse(tools + R"(,"tool_choice":{"type":"function","function":{"name":"a"}})");
  REQUIRE(named.ok());
  auto so = tool_choice_constraint(*named);
  REQUIRE(so);
  named->structured = so;
  CHECK(accepts(*named, R"({"x": 3})"));
  CHECK_FALSE(accepts(*named, R"({"y": 3})"));
  CHECK_FALSE(accepts(*named, R"([{"name":"a","parameters":{"x":3}}])"));

  auto any_args = parse(tools + R"(,"tool_choice":{"type":"function","function":{"name":"b"}})");
  REQUIRE(any_args.ok());
  any_args->structured = tool_choice_constraint(*any_args);
  CHECK(accepts(*any_args, R"({"anything": [1]})"));  // no parameters: any object

  auto required = parse(tools + R"(,"tool_choice":"required")");
  REQUIRE(required.ok());
  required->structured = tool_choice_constraint(*required);
  CHECK(accepts(*required, R"([{"name":"a","parameters":{"x":1}}])"));
  CHECK(accepts(*required, R"([{"name":"a","parameters":{"x":1}}, {"name":"b","parameters":{}}])"));
  CHECK_FALSE(accepts(*required, R"([])"));
  CHECK_FALSE(accepts(*required, R"([{"name":"c","parameters":{}}])"));
  CHECK_FALSE(accepts(*required, R"([{"name":"a","parameters":{}}])"));

  auto single = parse(tools + R"(,"tool_choice":"required","parallel_tool_calls":false)");
  REQUIRE(single.ok());
  single->structured = tool_choice_constraint(*single);
  CHECK(accepts(*single, R"([{"name":"b","parameters":{}}])"));
  CHECK_FALSE(accepts(*single, R"([{"name":"b","parameters":{}},{"name":"b","parameters":{}}])"));

  auto automatic = parse(tools);
  REQUIRE(automatic.ok());
  CHECK(!tool_choice_constraint(*automatic));
  auto both = parse(tools + R"(,"tool_choice":"required","guided_regex":"a")");
  REQUIRE(!both.ok());
  CHECK(both.error().param == "tool_choice");
}
