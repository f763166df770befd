// Tool-call and reasoning formats of the model families (#24), through the per-choice
// pipeline (choice_text): golden parse cases written as the model cards document the
// outputs, the same result for the text whole and cut in 2 and 3 pieces at every position,
// fail-closed cases (malformed, unfinished, unknown function, second call with parallel
// calls off: content as written plus a warning, never a dropped or half call), and format
// detection from the shared chat templates.
#include "catch.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/choice_text.hpp"
#include "api/reasoning.hpp"
#include "api/strict_tools.hpp"
#include "api/structured.hpp"
#include "api/tool_call_syntax.hpp"
#include "api/tool_calls.hpp"
#include "text/grammar/matcher.hpp"

using namespace vks;
using namespace vks::api;

namespace {

struct outcome {
  std::string reasoning, content;
  std::vector<std::string> calls;  // "name args" and " id=..." when the id is the model's
  std::vector<std::string> warnings;
  bool operator==(const outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const outcome& o) {
  os << "reasoning [" << o.reasoning << "] content [" << o.content << "] calls";
  for (const auto& c : o.calls) os << " {" << c << "}";
  return os << " warnings " << o.warnings.size();
}

std::string call_text(const tool_call& c) {
  std::string s = c.name + " " + c.arguments;
  if (c.id.rfind("chatcmpl-tool-", 0) != 0) {
    // A 9-character id is Mistral's generated shape (random): recorded by shape only.
    const bool generated9 = c.id.size() == 9 && c.id.find_first_not_of("0123456789abcdef") == std::string::npos;
    s += generated9 ? " id=<9>" : " id=" + c.id;
  } else {
    CHECK(c.id.size() == 14 + 32);
  }
  return s;
}

outcome run(const choice_text_settings& s, const std::vector<std::string_view>& pieces) {
  choice_text t(s);
  choice_text::delta all;
  for (auto p : pieces) all.append(t.push(p));
  all.append(t.flush());
  outcome o{all.reasoning, all.content, {}, all.warnings};
  for (const auto& c : all.calls) o.calls.push_back(call_text(c));
  return o;
}

// The outcome of the whole text; every 2-way and 3-way cut must give the same.
outcome parse_every_cut(const choice_text_settings& s, std::string_view text) {
  const outcome whole = run(s, {text});
  for (std::size_t i = 0; i <= text.size(); ++i) {
    INFO("cut at " << i);
    REQUIRE(run(s, {text.substr(0, i), text.substr(i)}) == whole);
  }
  const std::size_t step = text.size() > 160 ? 3 : 1;  // keeps the 3-way pass fast on long texts
  for (std::size_t i = 0; i <= text.size(); i += step)
    for (std::size_t j = i; j <= text.size(); j += step) {
      INFO("cuts at " << i << ", " << j);
      REQUIRE(run(s, {text.substr(0, i), text.substr(i, j - i), text.substr(j)}) == whole);
    }
  return whole;
}

std::shared_ptr<const tool_catalog> weather_tools() {
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"},
      "zip": {"type": "string"}, "tags": {"type": "array"}}}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}])");
  return std::make_shared<tool_catalog>(tool_catalog::from_tools(tools));
}

choice_text_settings format(tool_call_format f, bool reasoning = false) {
  choice_text_settings s;
  s.tool_calls = f;
  s.reasoning = reasoning;
  s.tools = weather_tools();
  return s;
}

// A shared chat template, or with "repo:" one of the repository's (tests/text/jinja/templates).
std::string read_template(const std::string& name) {
  const bool repo = name.rfind("repo:", 0) == 0;
  const char* root = std::getenv(repo ? "VKS_SOURCE_ROOT" : "VKS_SHARED");
  REQUIRE(root != nullptr);
  std::ifstream f(std::string(root) + (repo ? "/tests/text/jinja/templates/" + name.substr(5) : "/models/chat-templates/" + name));
  REQUIRE(f);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("formats: gpt-oss harmony channels (analysis, commentary calls, final)") {
  const auto s = format(tool_call_format::harmony);
  // The reply after "<|start|>assistant"; <|call|> and <|return|> end the turn (EOS: not in the text).
  auto r = parse_every_cut(s,
      "<|channel|>analysis<|message|>User asks for the weather in Tokyo. Use get_weather.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
      "{\"city\": \"Tokyo\"}");
  CHECK(r.reasoning == "User asks for the weather in Tokyo. Use get_weather.");
  CHECK(r.content.empty());
  CHECK(r.calls == std::vector<std::string>{"get_weather {\"city\":\"Tokyo\"}"});
  CHECK(r.warnings.empty());

  r = parse_every_cut(s, "<|channel|>analysis<|message|>2+2 is 4.<|end|><|start|>assistant<|channel|>final<|message|>The answer is 4.");
  CHECK(r.reasoning == "2+2 is 4.");
  CHECK(r.content == "The answer is 4.");
  CHECK(r.calls.empty());

  // A call on the analysis channel, a recipient before the channel, a zero-argument call,
  // a preamble on commentary, several calls.
  r = parse_every_cut(s,
      "<|channel|>analysis to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"
      "<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{}<|call|>"
      "<|start|>assistant<|channel|>commentary<|message|>Checking both.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_time<|message|>");
  CHECK(r.reasoning.empty());
  CHECK(r.content == "Checking both.");
  CHECK(r.calls == std::vector<std::string>{"get_weather {\"city\":\"Paris\"}", "get_time {}", "get_time {}"});
}

TEST_CASE("formats: harmony fails closed") {
  const auto s = format(tool_call_format::harmony);
  // Unfinished arguments (cut by max_tokens): the message as written, with a warning.
  const std::string cut = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"To";
  auto r = parse_every_cut(s, "<|channel|>analysis<|message|>go<|end|><|start|>assistant" + cut);
  CHECK(r.reasoning == "go");
  CHECK(r.calls.empty());
  CHECK(r.content == "<|start|>assistant" + cut);
  CHECK(r.warnings.size() == 1);
  // A function that was not offered, a built-in tool recipient.
  r = parse_every_cut(s, "<|channel|>commentary to=functions.rm_rf<|message|>{}<|call|>");
  CHECK(r.calls.empty());
  CHECK(r.content == "<|channel|>commentary to=functions.rm_rf<|message|>{}<|call|>");
  CHECK(r.warnings.size() == 1);
  r = parse_every_cut(s, "<|channel|>analysis to=browser.search<|message|>{\"q\":\"x\"}");
  CHECK(r.content == "<|channel|>analysis to=browser.search<|message|>{\"q\":\"x\"}");
  CHECK(r.warnings.size() == 1);
  // Not harmony at all (markers lost): content, with a warning.
  r = parse_every_cut(s, "analysisThinking hard.assistantfinalHello");
  CHECK(r.content == "analysisThinking hard.assistantfinalHello");
  CHECK(r.warnings.size() == 1);
  const std::string long_plain(700, 'x');
  r = parse_every_cut(s, long_plain + "<|message|>y");
  CHECK(r.content == long_plain + "<|message|>y");
  // parallel_tool_calls false: the second call stays content.
  auto one = s;
  one.parallel_tool_calls = false;
  r = parse_every_cut(one, "<|channel|>commentary to=functions.get_time<|message|>{}<|call|>"
                           "<|start|>assistant<|channel|>commentary to=functions.get_time<|message|>{}");
  CHECK(r.calls.size() == 1);
  CHECK(r.warnings.size() == 1);
}

TEST_CASE("formats: Qwen3-Coder / Qwen3.5 XML calls, values typed by the schema") {
  const auto s = format(tool_call_format::qwen3_xml, true);
  const std::string call =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
      "<parameter=zip>\n75001\n</parameter>\n<parameter=metric>\ntrue\n</parameter>\n<parameter=tags>\n[\"a\", 1]\n"
      "</parameter>\n</function>\n</tool_call>";
  const std::string args = R"({"city":"Paris","days":3,"zip":"75001","metric":true,"tags":["a",1]})";
  auto r = parse_every_cut(s, "<think>Need weather.</think>\n\nChecking.\n" + call);
  CHECK(r.reasoning == "Need weather.");
  CHECK(r.content == "\n\nChecking.\n");
  CHECK(r.calls == std::vector<std::string>{"get_weather " + args});
  // Inside the reasoning (Qwen3.5 opens the call before </think>, or never closes it).
  r = parse_every_cut(s, "<think>Let me call it. " + call + "</think>");
  CHECK(r.reasoning == "Let me call it. ");
  CHECK(r.calls == std::vector<std::string>{"get_weather " + args});
  r = parse_every_cut(s, "<think>plan " + call);
  CHECK(r.calls == std::vector<std::string>{"get_weather " + args});
  // Prose that mentions the tag inside reasoning stays reasoning (no warning).
  r = parse_every_cut(s, "<think>I could use <tool_call> here</think>No.");
  CHECK(r.reasoning == "I could use <tool_call> here");
  CHECK(r.content == "No.");
  CHECK(r.warnings.empty());
  // Two functions in one block, a zero-argument call.
  r = parse_every_cut(s, "<tool_call><function=get_time></function><function=get_time>\n</function></tool_call>");
  CHECK(r.calls == std::vector<std::string>{"get_time {}", "get_time {}"});
}

TEST_CASE("formats: Qwen3 XML fails closed") {
  const auto s = format(tool_call_format::qwen3_xml);
  for (const std::string bad : {
           "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",              // unfinished
           "<tool_call><function=get_weather><parameter=city>Paris</function></tool_call>",  // no </parameter>
           "<tool_call><function=delete_all></function></tool_call>",                 // not offered
           "<tool_call>{\"name\": \"get_time\"}</tool_call>",                         // JSON, not XML
       }) {
    auto r = parse_every_cut(s, "Text " + bad);
    CHECK(r.calls.empty());
    CHECK(r.content == "Text " + bad);
    CHECK(r.warnings.size() == 1);
  }
}

TEST_CASE("formats: Mistral [TOOL_CALLS] v3 list, v11 [ARGS], v13 [CALL_ID]") {
  const auto s = format(tool_call_format::mistral);
  auto r = parse_every_cut(s, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abcDEF123\"}]");
  CHECK(r.calls == std::vector<std::string>{"get_weather {\"city\":\"Paris\"} id=abcDEF123"});
  r = parse_every_cut(s, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}]");
  CHECK(r.calls == std::vector<std::string>{"get_time {} id=<9>"});
  r = parse_every_cut(s, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"days\": 2}[TOOL_CALLS]get_time[ARGS]{}");
  CHECK(r.calls == std::vector<std::string>{"get_weather {\"city\":\"Paris\",\"days\":2} id=<9>", "get_time {} id=<9>"});
  CHECK(r.content.empty());
  r = parse_every_cut(s, "Sure.[TOOL_CALLS]get_weather[CALL_ID]Zx81kLm0q[ARGS]{\"city\": \"a[ARGS]b\"}");
  CHECK(r.content == "Sure.");
  CHECK(r.calls == std::vector<std::string>{"get_weather {\"city\":\"a[ARGS]b\"} id=Zx81kLm0q"});
  // Fail closed: unfinished arguments, an unknown function.
  for (const std::string bad : {"[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Pa", "[TOOL_CALLS]format_disk[ARGS]{}"}) {
    r = parse_every_cut(s, bad);
    CHECK(r.calls.empty());
    CHECK(r.content == bad);
    CHECK(r.warnings.size() == 1);
  }
}

TEST_CASE("formats: DeepSeek R1 / V3 and V3.1 tool markers") {
  const auto s = format(tool_call_format::deepseek, true);
  auto r = parse_every_cut(s,
      "<think>weather</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
      "{\"city\": \"Tokyo\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```"
      "<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  CHECK(r.reasoning == "weather");
  CHECK(r.calls == std::vector<std::string>{"get_weather {\"city\":\"Tokyo\"}", "get_time {}"});
  r = parse_every_cut(s, "OK<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Tokyo\"}"
                         "<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  CHECK(r.content == "OK");
  CHECK(r.calls == std::vector<std::string>{"get_weather {\"city\":\"Tokyo\"}"});
  // The section still open at the end (EOS right after the last call) is judged as is.
  r = parse_every_cut(s, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>");
  CHECK(r.calls == std::vector<std::string>{"get_time {}"});
  const std::string bad = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\"";
  r = parse_every_cut(s, bad);
  CHECK(r.content == bad);
  CHECK(r.warnings.size() == 1);
}

TEST_CASE("formats: pythonic calls (Llama 4, Phi-4-mini)") {
  const auto s = format(tool_call_format::pythonic);
  auto r = parse_every_cut(s, "[get_weather(city=\"San Francisco\", days=3, metric=True, tags=['a', (1, 2.5)]), get_time()]");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"San Francisco","days":3,"metric":true,"tags":["a",[1,2.5]]})",
                                            "get_time {}"});
  CHECK(r.content.empty());
  r = parse_every_cut(s, "<|python_start|>[get_weather(city='O\\'Hare', zip=None)]<|python_end|>");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"O'Hare","zip":null})"});
  r = parse_every_cut(s, "The answer is [1, 2].");
  CHECK(r.content == "The answer is [1, 2].");
  CHECK(r.warnings.empty());
  for (const std::string bad : {"[1, 2]", "[get_weather(city=\"Pa", "[unknown_fn(a=1)]", "[get_time(]"}) {
    r = parse_every_cut(s, bad);
    CHECK(r.calls.empty());
    CHECK(r.content == bad);
    CHECK(r.warnings.size() == 1);
  }
}

TEST_CASE("formats: GLM 4.5-4.7, Kimi K2, Granite, Gemma 4") {
  auto r = parse_every_cut(format(tool_call_format::glm, true),
      "<think>need it</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
      "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call><tool_call>get_time</tool_call>");
  CHECK(r.reasoning == "need it");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"Beijing","days":2})", "get_time {}"});
  r = parse_every_cut(format(tool_call_format::kimi),
      "Let me check.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
      "{\"city\": \"Beijing\"}<|tool_call_end|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}"
      "<|tool_call_end|><|tool_calls_section_end|>");
  CHECK(r.content == "Let me check.");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"Beijing"} id=functions.get_weather:0)",
                                            "get_time {} id=functions.get_time:1"});
  r = parse_every_cut(format(tool_call_format::granite),
                      "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Boston\"}}]");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"Boston"})"});
  r = parse_every_cut(format(tool_call_format::gemma4),
                      "<|tool_call>call:get_weather{city:<|\"|>London, UK<|\"|>,days:3,metric:false}<tool_call|>");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"London, UK","days":3,"metric":false})"});
  for (auto [f, bad] : {std::pair{tool_call_format::glm, std::string("<tool_call>get_weather<arg_key>city</arg_key>")},
                        std::pair{tool_call_format::kimi, std::string("<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0")},
                        std::pair{tool_call_format::granite, std::string("<|tool_call|>[{\"name\": \"get_time\"")},
                        std::pair{tool_call_format::gemma4, std::string("<|tool_call>call:get_weather{city:<|\"|>Lon")}}) {
    r = parse_every_cut(format(f), bad);
    CHECK(r.calls.empty());
    CHECK(r.content == bad);
    CHECK(r.warnings.size() == 1);
  }
}

TEST_CASE("formats: MiniMax-M2 invoke blocks") {
  const auto s = format(tool_call_format::minimax, true);
  auto r = parse_every_cut(s, "<think>\nplan\n</think>\n\nOK\n<minimax:tool_call>\n<invoke name=\"get_weather\"><parameter name=\"city\">"
                              "Paris</parameter>\n<parameter name=\"days\">2</parameter>\n</invoke>\n<invoke name=\"get_time\"></invoke>\n"
                              "</minimax:tool_call>");
  CHECK(r.reasoning == "\nplan\n");
  CHECK(r.content == "\n\nOK\n");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"Paris","days":2})", "get_time {}"});
  const std::string bad = "<minimax:tool_call><invoke name=\"get_weather\"><parameter name=\"city\">Par";
  r = parse_every_cut(format(tool_call_format::minimax), bad);
  CHECK(r.content == bad);
  CHECK(r.warnings.size() == 1);
}

TEST_CASE("formats: Seed-OSS <seed:tool_call> blocks and <seed:think> reasoning") {
  // Seed-OSS's template: "<seed:tool_call>\n<function=f>\n<parameter=p>v</parameter>\n</function>\n</seed:tool_call>".
  auto s = format(tool_call_format::seed_oss, true);
  s.tags = *reasoning_tags_of_template("<seed:think>");
  const std::string call = "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
                           "<parameter=days>3</parameter>\n<parameter=zip>75001</parameter>\n</function>\n</seed:tool_call>";
  auto r = parse_every_cut(s, "<seed:think>Need the weather.</seed:think>Checking.\n" + call);
  CHECK(r.reasoning == "Need the weather.");
  CHECK(r.content == "Checking.\n");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"Paris","days":3,"zip":"75001"})"});
  CHECK(r.warnings.empty());
  // A call written inside the reasoning is still a call; prose naming the tag stays reasoning.
  r = parse_every_cut(s, "<seed:think>Calling. " + call + "</seed:think>");
  CHECK(r.reasoning == "Calling. ");
  CHECK(r.calls.size() == 1);
  r = parse_every_cut(s, "<seed:think>I could write <seed:tool_call> now.</seed:think>No.");
  CHECK(r.reasoning == "I could write <seed:tool_call> now.");
  CHECK(r.content == "No.");
  // Two functions in one block, then a zero-argument call in a second block.
  r = parse_every_cut(format(tool_call_format::seed_oss), "<seed:tool_call><function=get_time></function>"
                      "<function=get_time>\n</function></seed:tool_call><seed:tool_call><function=get_time></function></seed:tool_call>");
  CHECK(r.calls == std::vector<std::string>{"get_time {}", "get_time {}", "get_time {}"});
  // Fail closed: unfinished, malformed, not offered; Qwen3's own tags are plain text here.
  for (const std::string bad : {"<seed:tool_call>\n<function=get_weather>\n<parameter=city>Par",
                                "<seed:tool_call><function=get_weather><parameter=city>Paris</function></seed:tool_call>",
                                "<seed:tool_call><function=rm_rf></function></seed:tool_call>"}) {
    INFO(bad);
    r = parse_every_cut(format(tool_call_format::seed_oss), bad);
    CHECK(r.calls.empty());
    CHECK(r.content == bad);
    CHECK(r.warnings.size() == 1);
  }
  r = parse_every_cut(format(tool_call_format::seed_oss), "<tool_call><function=get_time></function></tool_call>");
  CHECK(r.calls.empty());
  CHECK(r.warnings.empty());
}

TEST_CASE("formats: LFM2 <|tool_call_start|> pythonic lists") {
  // LFM2's model card: "<|tool_call_start|>[get_candidate_status(candidate_id=\"12345\")]<|tool_call_end|>Checking".
  const auto s = format(tool_call_format::lfm2);
  auto r = parse_every_cut(s, "<|tool_call_start|>[get_weather(city=\"Paris\", days=3, metric=True), get_time()]"
                              "<|tool_call_end|>Checking the weather.");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"Paris","days":3,"metric":true})", "get_time {}"});
  CHECK(r.content == "Checking the weather.");
  // LFM2.5's template writes single-quoted strings.
  r = parse_every_cut(s, "Sure.<|tool_call_start|>[get_weather(city='Lyon', tags=['a', 1])]<|tool_call_end|>");
  CHECK(r.content == "Sure.");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"Lyon","tags":["a",1]})"});
  // JSON escapes in strings (what --strict-tools's JSON values may write), a surrogate pair included.
  r = parse_every_cut(s, R"(<|tool_call_start|>[get_weather(city="Caf\u00e9 \ud83d\ude00\b")]<|tool_call_end|>)");
  CHECK(r.calls == std::vector<std::string>{"get_weather {\"city\":\"Caf\u00e9 \U0001F600\\b\"}"});
  r = parse_every_cut(s, R"(<|tool_call_start|>[get_weather(city="\ud83d")]<|tool_call_end|>)");  // a lone surrogate
  CHECK(r.calls.empty());
  CHECK(r.warnings.size() == 1);
  // Fail closed.
  for (const std::string bad : {"<|tool_call_start|>[get_weather(city=\"Par", "<|tool_call_start|>[get_weather(city)]<|tool_call_end|>",
                                "<|tool_call_start|>[rm_rf()]<|tool_call_end|>", "<|tool_call_start|>[]<|tool_call_end|>"}) {
    INFO(bad);
    r = parse_every_cut(s, bad);
    CHECK(r.calls.empty());
    CHECK(r.content == bad);
    CHECK(r.warnings.size() == 1);
  }
  auto one = s;
  one.parallel_tool_calls = false;
  r = parse_every_cut(one, "<|tool_call_start|>[get_time()]<|tool_call_end|><|tool_call_start|>[get_time()]<|tool_call_end|>");
  CHECK(r.calls.size() == 1);
  CHECK(r.content == "<|tool_call_start|>[get_time()]<|tool_call_end|>");
  CHECK(r.warnings.size() == 1);
}

TEST_CASE("formats: Granite 3.2 plain-text thought markers") {
  // Granite 3.2's thinking prompt: "Write your thoughts after 'Here is my thought process:' and write
  // your response after 'Here is my response:'".
  choice_text_settings s = format(tool_call_format::granite, true);
  auto tags = reasoning_tags_of_template(
      "... Write your thoughts after 'Here is my thought process:' and write your response after 'Here is my response:' ... <|tool_call|>");
  REQUIRE(tags);
  CHECK(tags->start == "Here is my thought process:");
  CHECK(tags->end == "Here is my response:");
  CHECK_FALSE(reasoning_tags_are_special(*tags));
  s.tags = *tags;
  auto r = parse_every_cut(s, "Here is my thought process:\nThe user wants weather.\nHere is my response:\nIt is sunny.");
  CHECK(r.reasoning == "\nThe user wants weather.\n");
  CHECK(r.content == "\nIt is sunny.");
  r = parse_every_cut(s, "Here is my thought process:\nNeed a call.\nHere is my response:\n<|tool_call|>[{\"name\": \"get_time\", \"arguments\": {}}]");
  CHECK(r.reasoning == "\nNeed a call.\n");
  CHECK(r.calls == std::vector<std::string>{"get_time {}"});
  // Without the markers (thinking off) everything is content.
  r = parse_every_cut(s, "Here is the answer: sunny.");
  CHECK(r.content == "Here is the answer: sunny.");
  CHECK(r.reasoning.empty());
}

TEST_CASE("formats: Functionary v3.1 <function=f> blocks") {
  // The v3.1 model card's shape: <function=name>{JSON}</function>, content before it.
  const auto s = format(tool_call_format::functionary_v3_1);
  auto r = parse_every_cut(s, "<function=get_weather>{\"city\": \"Istanbul\", \"days\": 3}</function>");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"Istanbul","days":3})"});
  CHECK(r.content.empty());
  r = parse_every_cut(s, "Checking both.<function=get_weather>{\"city\": \"a>b\"}</function><function=get_time>{}</function>");
  CHECK(r.content == "Checking both.");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"a>b"})", "get_time {}"});
  // The end of the text closes an open block (EOS right after the arguments).
  r = parse_every_cut(s, "<function=get_time>{}");
  CHECK(r.calls == std::vector<std::string>{"get_time {}"});
  for (const std::string bad : {"<function=get_weather>{\"city\": </function>", "<function=rm_rf>{}</function>",
                                "<function=get_weather {}</function>", "<function=get_weather>{\"city\": \"Ist"}) {
    INFO(bad);
    r = parse_every_cut(s, bad);
    CHECK(r.calls.empty());
    CHECK(r.content == bad);
    CHECK(r.warnings.size() == 1);
  }
}

TEST_CASE("formats: Functionary v3.2 >>>recipient messages") {
  // The prompt ends with ">>>": the reply starts with the first recipient.
  const auto s = format(tool_call_format::functionary_v3_2);
  auto r = parse_every_cut(s, "get_weather\n{\"city\": \"Hanoi\"}");
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"Hanoi"})"});
  CHECK(r.content.empty());
  r = parse_every_cut(s, "all\nLet me check the weather >>> quickly.\n>>>get_weather\n{\"city\": \"a>>>b\", \"tags\": [\"x\"]}\n"
                         ">>>get_time\n{}>>>all\nDone.");
  // ">>> quickly." is no recipient: a malformed message, kept as written with a warning.
  CHECK(r.content == "Let me check the weather >>> quickly.\nDone.");
  CHECK(r.warnings.size() == 1);
  CHECK(r.calls == std::vector<std::string>{R"(get_weather {"city":"a>>>b","tags":["x"]})", "get_time {}"});
  r = parse_every_cut(s, "all\nThe weather is sunny.\nNo call needed.");
  CHECK(r.content == "The weather is sunny.\nNo call needed.");
  CHECK(r.warnings.empty());
  // A reply that writes its own first ">>>", and an empty-argument call.
  r = parse_every_cut(s, ">>>get_time\n>>>all\nok");
  CHECK(r.calls == std::vector<std::string>{"get_time {}"});
  CHECK(r.content == "ok");
  // A reply that is not in the format at all is plain content.
  r = parse_every_cut(s, "Plain prose, no recipient.");
  CHECK(r.content == "Plain prose, no recipient.");
  CHECK(r.warnings.empty());
  // Fail closed: unfinished or malformed arguments, an unknown function, a bare ">>>".
  for (const std::string bad : {"get_weather\n{\"city\": \"Han", "get_weather\n{\"city\" \"Hanoi\"}>>>all\nx",
                                "rm_rf\n{}", "all\nx>>>get_weather"}) {
    INFO(bad);
    r = parse_every_cut(s, bad);
    CHECK(r.calls.empty());
    CHECK(r.warnings.size() == 1);
    std::string expect = bad;
    if (expect.rfind("all\n", 0) == 0) expect.erase(0, 4);
    const auto cut = expect.find(">>>all\n");
    if (cut != std::string::npos) expect.erase(cut, 7);
    CHECK(r.content == expect);
  }
  // parallel_tool_calls false: the second call stays content.
  auto one = s;
  one.parallel_tool_calls = false;
  r = parse_every_cut(one, "get_time\n{}>>>get_time\n{}");
  CHECK(r.calls.size() == 1);
  CHECK(r.content == ">>>get_time\n{}");
  CHECK(r.warnings.size() == 1);
}

TEST_CASE("formats: Granite 3.3 <think> reasoning and <response> content") {
  const auto tags = reasoning_tags_of_template(read_template("ibm-granite-granite-3.3-2B-Instruct.jinja"));
  REQUIRE(tags);
  CHECK(tags->start == "<think>");
  CHECK(tags->response_start == "<response>");
  CHECK(reasoning_tags_of_template(read_template("Qwen-Qwen3-0.6B.jinja"))->response_start.empty());
  auto s = format(tool_call_format::granite, true);
  s.tags = *tags;
  auto r = parse_every_cut(s, "<think>The user wants the weather.</think>\n<response>Paris is sunny.</response>");
  CHECK(r.reasoning == "The user wants the weather.");
  CHECK(r.content == "Paris is sunny.");
  // Text after the response stays content; a call in the response is a call.
  r = parse_every_cut(s, "<think>t</think><response>Calling.<|tool_call|>[{\"name\": \"get_time\", \"arguments\": {}}]</response>");
  CHECK(r.content == "Calling.");
  CHECK(r.calls == std::vector<std::string>{"get_time {}"});
  r = parse_every_cut(s, "<think>t</think><|tool_call|>[{\"name\": \"get_time\", \"arguments\": {}}]");
  CHECK(r.calls == std::vector<std::string>{"get_time {}"});
  // Without the wrapper (non-thinking mode), content passes unchanged; an unclosed one is
  // stripped of its start tag only.
  r = parse_every_cut(s, "Plain <response> answer.");
  CHECK(r.content == "Plain <response> answer.");
  r = parse_every_cut(s, "<response>Cut off by max_tokens</resp");
  CHECK(r.content == "Cut off by max_tokens</resp");
  s.reasoning = false;
  r = parse_every_cut(s, " <response>A.</response> B");
  CHECK(r.content == "A. B");
}

TEST_CASE("formats: parallel_tool_calls false keeps the first call in every block format") {
  for (auto [f, text] : {std::pair{tool_call_format::hermes,
                                   std::string("<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call><tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>")},
                         std::pair{tool_call_format::mistral, std::string("[TOOL_CALLS]get_time[ARGS]{}[TOOL_CALLS]get_time[ARGS]{}")},
                         std::pair{tool_call_format::pythonic, std::string("[get_time(), get_time()]")}}) {
    auto s = format(f);
    s.parallel_tool_calls = false;
    auto r = parse_every_cut(s, text);
    INFO(to_string(f));
    // Hermes: the second block stays content; one-block formats: the block as written.
    if (f == tool_call_format::hermes) CHECK(r.calls.size() == 1);
    else CHECK(r.content == text);
    CHECK(r.warnings.size() == 1);
  }
}

TEST_CASE("formats: reasoning markers beyond <think>") {
  choice_text_settings s;
  s.reasoning = true;
  s.tags = *reasoning_tags_of_template("... [THINK] ... [/THINK]");
  auto r = parse_every_cut(s, "[THINK]Mistral thinks.[/THINK]Answer.");
  CHECK(r.reasoning == "Mistral thinks.");
  CHECK(r.content == "Answer.");
  s.tags = *reasoning_tags_of_template("{{ '<seed:think>' }}");
  r = parse_every_cut(s, "<seed:think>Seed thinks.</seed:think>Answer.");
  CHECK(r.reasoning == "Seed thinks.");
  CHECK(r.content == "Answer.");
  CHECK_FALSE(reasoning_tags_of_template("no markers").has_value());
}

TEST_CASE("formats: detection from the shared chat templates, and forcing by name") {
  const std::vector<std::pair<const char*, tool_call_format>> cases{
      {"openai-gpt-oss-120b.jinja", tool_call_format::harmony},
      {"Qwen3-Coder.jinja", tool_call_format::qwen3_xml},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", tool_call_format::mistral},
      {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", tool_call_format::mistral},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", tool_call_format::mistral},
      {"deepseek-ai-DeepSeek-V3.1.jinja", tool_call_format::deepseek},
      {"llama-cpp-deepseek-r1.jinja", tool_call_format::deepseek},
      {"GLM-4.6.jinja", tool_call_format::glm},
      {"Kimi-K2-Instruct.jinja", tool_call_format::kimi},
      {"ibm-granite-granite-3.3-2B-Instruct.jinja", tool_call_format::granite},
      {"google-gemma-4-31B-it.jinja", tool_call_format::gemma4},
      {"Qwen-Qwen3-0.6B.jinja", tool_call_format::hermes},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", tool_call_format::llama3_json},
      {"MiniMax-M2.jinja", tool_call_format::minimax},
      {"meetkai-functionary-medium-v3.2.jinja", tool_call_format::functionary_v3_2},
      {"repo:meetkai-functionary-medium-v3.1.jinja", tool_call_format::functionary_v3_1},
      {"repo:ByteDance-Seed-OSS.jinja", tool_call_format::seed_oss},
      {"repo:LFM2.5-8B-A1B.jinja", tool_call_format::lfm2},
      {"repo:LFM2-8B-A1B.jinja", tool_call_format::lfm2},
      {"google-gemma-2-2b-it.jinja", tool_call_format::none},
  };
  for (const auto& [name, f] : cases) {
    INFO(name);
    CHECK(to_string(tool_call_format_of_template(read_template(name))) == to_string(f));
  }
  CHECK(reasoning_tags_of_template(read_template("mistralai-Ministral-3-14B-Reasoning-2512.jinja"))->start == "[THINK]");
  CHECK(reasoning_tags_of_template(read_template("GLM-4.6.jinja"))->start == "<think>");
  CHECK(reasoning_tags_of_template(read_template("repo:ByteDance-Seed-OSS.jinja"))->start == "<seed:think>");
  for (const auto& r : tool_format_rules()) CHECK(tool_call_format_from_name(to_string(r.format)) == r.format);
  CHECK_FALSE(tool_call_format_from_name("bogus").has_value());
}

TEST_CASE("formats: random marker soup gives the same result whole and cut, in every format") {
  // Fragments of every format's markup and bodies, glued at random (fixed seed): each text
  // cut at every position must give what it gives whole.
  const std::vector<std::string> bits{
      "<tool_call>", "</tool_call>", "<function=get_time>", "</function>", "<parameter=city>", "</parameter>",
      "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "<think>", "</think>", "[TOOL_CALLS]", "[ARGS]",
      "[CALL_ID]", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>",
      "<｜tool▁calls▁end｜>", "<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>",
      "<|tool_call_end|>", "<|tool_calls_section_end|>", "<|tool_call|>", "<|tool_call>", "<tool_call|>", "call:",
      "<|\"|>", "<|channel|>", "analysis", "final", "commentary", " to=functions.get_time", "<|message|>", "<|end|>",
      "<|start|>assistant", "<|call|>", "<minimax:tool_call>", "<invoke name=\"get_time\">", "</invoke>",
      "</minimax:tool_call>", "<seed:tool_call>", "</seed:tool_call>", "<|tool_call_start|>", "<|tool_call_end|>",
      ">>>", "all\n", "get_time\n", "<function=", "[", "]", "(", ")", "{", "}", "get_time", "get_weather", "=", ",", "\"",
      "{\"name\": \"get_time\", \"arguments\": {}}", "{}", "{\"city\": \"Paris\"}", "x", " ", "\n", "<", "|", "é"};
  const std::vector<tool_call_format> formats{
      tool_call_format::hermes, tool_call_format::qwen3_xml, tool_call_format::glm, tool_call_format::deepseek,
      tool_call_format::kimi, tool_call_format::mistral, tool_call_format::granite, tool_call_format::gemma4,
      tool_call_format::pythonic, tool_call_format::llama3_json, tool_call_format::harmony, tool_call_format::minimax,
      tool_call_format::functionary_v3_1, tool_call_format::functionary_v3_2, tool_call_format::seed_oss,
      tool_call_format::lfm2};
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&](std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  for (int round = 0; round < 60; ++round) {
    std::string text;
    const auto n = 1 + next(14);
    for (std::uint64_t i = 0; i < n; ++i) text += bits[next(bits.size())];
    for (auto f : formats) {
      INFO(to_string(f) << ": " << text);
      auto s = format(f, next(2) == 1);
      const outcome whole = run(s, {text});
      for (std::size_t i = 0; i <= text.size(); ++i) REQUIRE(run(s, {std::string_view(text).substr(0, i), std::string_view(text).substr(i)}) == whole);
      // Nothing is lost: every byte outside calls and markers reappears (at least as long).
      if (whole.calls.empty() && f != tool_call_format::harmony && f != tool_call_format::functionary_v3_2 && !s.reasoning) CHECK(whole.content == text);
    }
  }
}

TEST_CASE("formats: --strict-tools constrains a started call to an offered function's schema") {
  auto req = parse_chat_request(json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "q"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
      {"type": "function", "function": {"name": "get_time"}}]})"));
  REQUIRE(req);
  CHECK_FALSE(strict_tools_constraint(*req, strict_form_of(tool_call_format::none, "")).has_value());
  // Each form: the text around the arguments, the parser format, and the template that selects it.
  struct form_case {
    tool_call_format format;
    const char* template_src;
    std::string open_weather, open_time, close;
    std::string before, after;  // free text allowed around a call
  };
  const std::vector<form_case> cases{
      {tool_call_format::hermes, "", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ",
       "<tool_call>\n{\"name\": \"get_time\", \"arguments\": ", "}\n</tool_call>", "Let me look. ", " Done."},
      {tool_call_format::granite, "", "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": ",
       "<|tool_call|>[{\"name\": \"get_time\", \"arguments\": ", "}]", "Let me look. ", ""},
      {tool_call_format::mistral, "[TOOL_CALLS][", "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": ",
       "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": ", "}]", "Sure. ", ""},
      {tool_call_format::mistral, "'[TOOL_CALLS]' + name + '[ARGS]'", "[TOOL_CALLS]get_weather[ARGS]",
       "[TOOL_CALLS]get_time[ARGS]", "", "Sure. ", ""},
      {tool_call_format::deepseek, "'<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>'",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n",
       "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", "OK ", ""},
      {tool_call_format::deepseek, "", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>", "<｜tool▁call▁end｜><｜tool▁calls▁end｜>", "OK ", ""},
      {tool_call_format::kimi, "",
       "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>",
       "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0<|tool_call_argument_begin|>",
       "<|tool_call_end|><|tool_calls_section_end|>", "OK ", ""},
      {tool_call_format::harmony, "", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
       "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>", "<|call|>",
       "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant", ""},
      {tool_call_format::functionary_v3_1, "", "<function=get_weather>", "<function=get_time>", "</function>", "OK ", " "},
      // v3.2: the prompt's ">>>" is the tag's prefix: the reply's first message is a call (or "all").
      {tool_call_format::functionary_v3_2, "", "get_weather\n", "get_time\n", "", "", ""},
      {tool_call_format::functionary_v3_2, "", ">>>get_weather\n", ">>>get_time\n", "", "all\nChecking.", ""},
      {tool_call_format::llama3_json, "", "{\"name\": \"get_weather\", \"parameters\": ", "{\"name\": \"get_time\", \"parameters\": ",
       "}", "", ""},
  };
  for (const auto& fc : cases) {
    const strict_form form = strict_form_of(fc.format, fc.template_src);
    INFO(to_string(fc.format) << " form " << static_cast<int>(form) << ": " << fc.open_weather);
    auto so = strict_tools_constraint(*req, form);
    REQUIRE(so);
    auto c = compile_structured(*so);
    REQUIRE(c);
    auto accepts = [&](const std::string& text) {
      text::grammar::matcher m(c->grammar);
      return m.accept(text) && m.can_end();
    };
    const std::string weather = fc.open_weather + R"({"city": "Paris"})" + fc.close;
    CHECK(accepts(fc.before + weather + fc.after));
    CHECK(accepts(fc.before + fc.open_time + "{}" + fc.close));
    if (fc.format != tool_call_format::functionary_v3_2) CHECK(accepts("No call at all."));
    else CHECK(accepts("all\nNo call at all."));
    // A constrained generation cannot write malformed arguments.
    CHECK_FALSE(accepts(fc.before + fc.open_weather + R"({"city": 5})" + fc.close));        // schema
    CHECK_FALSE(accepts(fc.before + fc.open_weather + R"({})" + fc.close));                 // required
    CHECK_FALSE(accepts(fc.before + fc.open_weather + R"({"city": "Pa)"));                  // unfinished
    CHECK_FALSE(accepts(fc.before + fc.open_weather + R"({"city": "Paris",})" + fc.close));  // not JSON
    // Only offered functions (v3.2's triggers are the offered calls: another name is text).
    std::string rm = fc.open_time;
    rm.replace(rm.find("get_time"), 8, "rm_rf");
    if (fc.format != tool_call_format::functionary_v3_2) CHECK_FALSE(accepts(fc.before + rm + "{}" + fc.close));
    // What it allows, the format's parser takes as the call.
    choice_text_settings s = format(fc.format);
    s.tools = std::make_shared<tool_catalog>(tool_catalog::from_tools(req->tools));
    auto r = parse_every_cut(s, fc.before + weather + fc.after);
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].rfind(R"(get_weather {"city":"Paris"})", 0) == 0);
    CHECK(r.warnings.empty());
  }
  // Variants from the shared templates.
  for (auto [file, form] : {std::pair{"deepseek-ai-DeepSeek-V3.1.jinja", strict_form::deepseek_v31},
                            std::pair{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", strict_form::deepseek_r1},
                            std::pair{"llama-cpp-deepseek-r1.jinja", strict_form::deepseek_r1},
                            std::pair{"Mistral-Small-3.2-24B-Instruct-2506.jinja", strict_form::mistral_v11},
                            std::pair{"mistralai-Ministral-3-14B-Reasoning-2512.jinja", strict_form::mistral_v11},
                            std::pair{"mistralai-Mistral-Nemo-Instruct-2407.jinja", strict_form::mistral_v3},
                            std::pair{"meetkai-functionary-medium-v3.2.jinja", strict_form::functionary_v3_2},
                            std::pair{"openai-gpt-oss-120b.jinja", strict_form::harmony}}) {
    INFO(file);
    const std::string src = read_template(file);
    CHECK(strict_form_of(tool_call_format_of_template(src), src) == form);
  }
  // The markers that are control tokens travel with the constraint (the engine allows them).
  auto so = strict_tools_constraint(*req, strict_form::kimi);
  REQUIRE(so);
  CHECK(std::find(so->special_texts.begin(), so->special_texts.end(), "<|tool_call_begin|>") != so->special_texts.end());
  auto c = compile_structured(*so);
  REQUIRE(c);
  CHECK(c->special_texts == so->special_texts);
}

TEST_CASE("formats: --strict-tools in the formats' own argument syntax (XML-like, GLM, MiniMax, Gemma 4, Python)") {
  auto req = parse_chat_request(json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "q"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string", "enum": ["c", "f"]},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}}},
                  "required": ["lat"]}},
      "required": ["city"]}}},
      {"type": "function", "function": {"name": "get_time"}},
      {"type": "function", "function": {"name": "odd", "parameters": {"type": "object", "properties": {"a>b": {"type": "string"}},
        "required": ["a>b"]}}}]})"));
  REQUIRE(req);
  using kv = std::vector<std::pair<std::string, std::string>>;  // parameter -> value as the format writes it
  struct form_case {
    tool_call_format format;
    std::function<std::string(const std::string&)> str;            // a string value
    std::function<std::string(const std::string&, const kv&)> call;  // a whole call
    std::string where;                                              // {"lat": 1.5, "tags": ["x"]} in the syntax
    std::string before;                                             // free text allowed before a call
  };
  auto tagged = [](std::string open, std::string mid, std::string close, std::string after, bool wrap) {
    return [=](const std::string& name, const kv& ps) {
      (void)name;
      std::string out;
      for (const auto& [k, v] : ps) out += open + k + mid + (wrap ? "\n" + v + "\n" : v) + close + after;
      return out;
    };
  };
  auto qwen = tagged("<parameter=", ">", "</parameter>", "\n", true);
  auto python_call = [](const std::string& name, const kv& ps) {
    std::string out = name + "(";
    for (std::size_t i = 0; i < ps.size(); ++i) out += (i ? ", " : "") + ps[i].first + "=" + ps[i].second;
    return out + ")";
  };
  auto quoted = [](const std::string& v) { return "\"" + v + "\""; };
  auto raw = [](const std::string& v) { return v; };
  const std::vector<form_case> cases{
      {tool_call_format::qwen3_xml, raw,
       [&](const std::string& n, const kv& ps) { return "<tool_call>\n<function=" + n + ">\n" + qwen(n, ps) + "</function>\n</tool_call>"; },
       R"({"lat": 1.5, "tags": ["x"]})", "Let me look. "},
      {tool_call_format::seed_oss, raw,
       [&](const std::string& n, const kv& ps) {
         return "<seed:tool_call>\n<function=" + n + ">\n" + qwen(n, ps) + "</function>\n</seed:tool_call>";
       },
       R"({"lat": 1.5, "tags": ["x"]})", "Let me look. "},
      {tool_call_format::glm, raw,
       [&](const std::string& n, const kv& ps) {
         return "<tool_call>" + n + tagged("\n<arg_key>", "</arg_key>\n<arg_value>", "</arg_value>", "", false)(n, ps) + "\n</tool_call>";
       },
       R"({"lat": 1.5, "tags": ["x"]})", "OK\n"},
      {tool_call_format::minimax, raw,
       [&](const std::string& n, const kv& ps) {
         return "<minimax:tool_call>\n<invoke name=\"" + n + "\">\n" +
                tagged("<parameter name=\"", "\">", "</parameter>", "\n", false)(n, ps) + "</invoke>\n</minimax:tool_call>";
       },
       R"({"lat": 1.5, "tags": ["x"]})", "OK\n"},
      {tool_call_format::gemma4, [](const std::string& v) { return "<|\"|>" + v + "<|\"|>"; },
       [](const std::string& n, const kv& ps) {
         std::string out = "<|tool_call>call:" + n + "{";
         for (std::size_t i = 0; i < ps.size(); ++i) out += (i ? "," : "") + ps[i].first + ":" + ps[i].second;
         return out + "}<tool_call|>";
       },
       "{lat:1.5,tags:[<|\"|>x<|\"|>]}", "Sure. "},
      {tool_call_format::lfm2, quoted,
       [&](const std::string& n, const kv& ps) { return "<|tool_call_start|>[" + python_call(n, ps) + "]<|tool_call_end|>"; },
       R"({"lat": 1.5, "tags": ["x"]})", "Sure. "},
      {tool_call_format::pythonic, quoted, [&](const std::string& n, const kv& ps) { return "[" + python_call(n, ps) + "]"; },
       R"({"lat": 1.5, "tags": ["x"]})", ""},
  };
  for (const auto& fc : cases) {
    const strict_form form = strict_form_of(fc.format, "");
    INFO(to_string(fc.format));
    auto so = strict_tools_constraint(*req, form);
    REQUIRE(so);
    auto c = compile_structured(*so);
    REQUIRE(c);
    auto accepts = [&](const std::string& text) {
      text::grammar::matcher m(c->grammar);
      return m.accept(text) && m.can_end();
    };
    const std::string weather = fc.call("get_weather", {{"city", fc.str("Paris")}, {"days", "3"}, {"where", fc.where}});
    CHECK(accepts(fc.before + weather));
    CHECK(accepts(fc.before + fc.call("get_time", {})));
    CHECK(accepts(fc.call("get_weather", {{"city", fc.str("Lyon")}, {"unit", fc.str("c")}})));
    CHECK(accepts("No call at all."));
    // A constrained generation cannot write malformed arguments.
    CHECK_FALSE(accepts(fc.call("get_weather", {{"city", fc.str("Paris")}, {"days", fc.str("three")}})));  // type
    CHECK_FALSE(accepts(fc.call("get_weather", {{"days", "3"}})));                                          // required
    CHECK_FALSE(accepts(fc.call("get_weather", {{"city", fc.str("Paris")}, {"unit", fc.str("k")}})));      // enum
    CHECK_FALSE(accepts(fc.call("get_weather", {{"city", fc.str("Paris")}, {"zip", fc.str("1")}})));       // not a parameter
    CHECK_FALSE(accepts(fc.call("get_weather", {{"days", "3"}, {"city", fc.str("Paris")}})));              // schema order
    CHECK_FALSE(accepts(fc.call("rm_rf", {})));                                                            // not offered
    CHECK_FALSE(accepts(fc.call("odd", {{"a>b", fc.str("x")}})));  // a required parameter it cannot write
    CHECK_FALSE(accepts(weather.substr(0, weather.size() - 3)));    // unfinished
    // What it allows, the format's parser takes as the call, whole and cut.
    choice_text_settings s = format(fc.format);
    s.tools = std::make_shared<tool_catalog>(tool_catalog::from_tools(req->tools));
    auto r = parse_every_cut(s, fc.before + weather);
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0] == R"(get_weather {"city":"Paris","days":3,"where":{"lat":1.5,"tags":["x"]}})");
    CHECK(r.warnings.empty());
    CHECK(r.content == fc.before);
  }
  // parallel_tool_calls false: one call per list (lfm2, pythonic).
  auto one = *req;
  one.parallel_tool_calls = false;
  for (auto [f, two] : {std::pair{tool_call_format::lfm2, std::string("<|tool_call_start|>[get_time(), get_time()]<|tool_call_end|>")},
                        std::pair{tool_call_format::pythonic, std::string("[get_time(), get_time()]")}}) {
    auto both = compile_structured(*strict_tools_constraint(*req, strict_form_of(f, "")));
    auto single = compile_structured(*strict_tools_constraint(one, strict_form_of(f, "")));
    REQUIRE((both && single));
    text::grammar::matcher m1(both->grammar), m2(single->grammar);
    CHECK((m1.accept(two) && m1.can_end()));
    CHECK_FALSE((m2.accept(two) && m2.can_end()));
  }
  // Control-token markers travel with the constraint; a template picks the form.
  auto so = strict_tools_constraint(*req, strict_form::gemma4);
  REQUIRE(so);
  CHECK(std::find(so->special_texts.begin(), so->special_texts.end(), "<|\"|>") != so->special_texts.end());
  for (auto [file, form] : {std::pair{"Qwen3-Coder.jinja", strict_form::qwen3_xml}, std::pair{"GLM-4.6.jinja", strict_form::glm},
                            std::pair{"MiniMax-M2.jinja", strict_form::minimax},
                            std::pair{"google-gemma-4-31B-it.jinja", strict_form::gemma4},
                            std::pair{"repo:ByteDance-Seed-OSS.jinja", strict_form::seed_oss},
                            std::pair{"repo:LFM2.5-8B-A1B.jinja", strict_form::lfm2}}) {
    INFO(file);
    const std::string src = read_template(file);
    CHECK(strict_form_of(tool_call_format_of_template(src), src) == form);
  }
  // No function the form can write: no constraint.
  auto only_odd = parse_chat_request(json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "q"}],
    "tools": [{"type": "function", "function": {"name": "odd", "parameters": {"type": "object", "properties": {"a>b": {"type": "string"}},
        "required": ["a>b"]}}}]})"));
  REQUIRE(only_odd);
  CHECK_FALSE(strict_tools_constraint(*only_odd, strict_form::gemma4).has_value());
}

// appended (#23, h23f): XML-like parameter values typed by schemas that allow several types
// (Qwen3.5 tools often declare nullable strings): a value of an allowed type keeps it, any
// other value stays text where strings are allowed.
TEST_CASE("formats: XML parameter values under multi-type schemas") {
  using syntax::typed_value;
  const json nullable_string = json::parse(R"({"type": ["string", "null"]})");
  CHECK(typed_value("\n123", &nullable_string) == json("\n123"));
  CHECK(typed_value("True", &nullable_string) == json("True"));
  CHECK(typed_value("None", &nullable_string) == json(nullptr));
  CHECK(typed_value("null", &nullable_string) == json(nullptr));
  CHECK(typed_value("\"quoted\"", &nullable_string) == json("quoted"));  // a JSON string, as --strict-tools writes it
  CHECK(typed_value("Paris", &nullable_string) == json("Paris"));
  const json any_of = json::parse(R"({"anyOf": [{"type": "integer"}, {"type": "string"}]})");
  CHECK(typed_value("7", &any_of) == json(7));
  CHECK(typed_value("7.5", &any_of) == json("7.5"));
  CHECK(typed_value("[1]", &any_of) == json("[1]"));
  const json number_or_null = json::parse(R"({"type": ["number", "null"]})");
  CHECK(typed_value("3", &number_or_null) == json(3));
  CHECK(typed_value("None", &number_or_null) == json(nullptr));
  CHECK(typed_value("abc", &number_or_null) == json("abc"));  // not JSON: text, as before
  const json string_only = json::parse(R"({"type": "string"})");
  CHECK(typed_value("\n42\n", &string_only) == json("\n42\n"));
  CHECK(typed_value("{\"a\": 1}", nullptr) == json{{"a", 1}});
}
