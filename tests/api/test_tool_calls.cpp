// Tool-call extraction (Hermes blocks, Llama 3 JSON): the parser alone (every cut of the
// text gives the same content and calls), format detection from real templates, the non-streaming message (tool_calls, null content,
// finish_reason) and the streamed deltas (one per call, index/id/type/function, then a
// finish chunk with "tool_calls").
#include "catch.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/chat_response.hpp"
#include "api/tool_calls.hpp"
#include "events.hpp"

using namespace vks;
using namespace vks::api;
using engine::finish_reason;

namespace {

struct parsed {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

parsed run(const std::vector<std::string>& pieces, tool_call_format f = tool_call_format::hermes,
           std::string name = {}) {
  tool_call_parser p(f, std::move(name));
  parsed out;
  auto take = [&](tool_call_parser::delta d) {
    out.content += d.content;
    for (auto& c : d.calls) {
      CHECK(c.id.rfind("chatcmpl-tool-", 0) == 0);
      out.calls.emplace_back(c.name, c.arguments);
    }
  };
  for (const auto& s : pieces) take(p.push(s));
  take(p.flush());
  return out;
}

using test::tok;

// A finished sequence of a 5-token prompt that stopped without a stop string or token.
engine::finished_event fin(int seq, std::string text, finish_reason r, int n_completion) {
  return test::fin(seq, std::move(text), r, {}, 5, n_completion);
}

const std::string two_calls =
    "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n"
    "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}\n</tool_call>";

}  // namespace

TEST_CASE("tool calls: blocks become calls, text around them stays content") {
  auto r = run({two_calls});
  CHECK(r.content == "Let me check.\n\n");
  REQUIRE(r.calls.size() == 2);
  CHECK(r.calls[0] == std::pair<std::string, std::string>{"get_weather", R"({"city":"Paris","unit":"c"})"});
  CHECK(r.calls[1] == std::pair<std::string, std::string>{"get_time", R"({"tz":"CET"})"});
}

TEST_CASE("tool calls: every cut of the text into two or three pieces gives the same result") {
  const auto whole = run({two_calls});
  for (std::size_t i = 0; i <= two_calls.size(); ++i) {
    INFO("cut at " << i);
    auto r = run({two_calls.substr(0, i), two_calls.substr(i)});
    CHECK(r.content == whole.content);
    CHECK(r.calls == whole.calls);
  }
  for (std::size_t i = 0; i <= two_calls.size(); i += 3)
    for (std::size_t j = i; j <= two_calls.size(); j += 5) {
      auto r = run({two_calls.substr(0, i), two_calls.substr(i, j - i), two_calls.substr(j)});
      CHECK(r.content == whole.content);
      CHECK(r.calls == whole.calls);
    }
}

TEST_CASE("tool calls: malformed blocks stay content, an open block at the end is judged") {
  auto bad = run({"a<tool_call>{\"nam\": 1}</tool_call>b"});
  CHECK(bad.content == "a<tool_call>{\"nam\": 1}</tool_call>b");
  CHECK(bad.calls.empty());
  auto notjson = run({"<tool_call>get_weather(Paris)</tool_call>"});
  CHECK(notjson.content == "<tool_call>get_weather(Paris)</tool_call>");
  auto open = run({"<tool_call>\n{\"name\": \"f\", \"parameters\": {\"x\": [1, 2]}}\n"});
  CHECK(open.content.empty());
  REQUIRE(open.calls.size() == 1);
  CHECK(open.calls[0].second == R"({"x":[1,2]})");
  auto open_bad = run({"<tool_call>{\"name\": \"f\", \"argu"});
  CHECK(open_bad.content == "<tool_call>{\"name\": \"f\", \"argu");
  auto no_args = run({"<tool_call>{\"name\": \"ping\"}</tool_call>"});
  REQUIRE(no_args.calls.size() == 1);
  CHECK(no_args.calls[0].second == "{}");
  auto partial_tag = run({"x <tool_ca", "ll but not really"});  // held back, then released
  CHECK(partial_tag.content == "x <tool_call but not really");
  CHECK(run({"1 < 2 and <tool"}).content == "1 < 2 and <tool");
}

TEST_CASE("tool calls: non-streaming message has tool_calls, null content, finish_reason tool_calls") {
  chat_output_settings s;
  s.tool_calls = tool_call_format::hermes;
  chat_accumulator acc(s);
  acc.on_event(tok(0, "<tool_call>\n{\"name\": \"get_weather\", ", 3));
  acc.on_event(fin(0, "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", finish_reason::stop, 9));
  REQUIRE(acc.done());
  auto j = acc.build({"chatcmpl-x", 1, "m"});
  const auto& c = j["choices"][0];
  CHECK(c["finish_reason"] == "tool_calls");
  CHECK(c["message"]["content"].is_null());
  REQUIRE(c["message"]["tool_calls"].size() == 1);
  const auto& t = c["message"]["tool_calls"][0];
  CHECK(t["type"] == "function");
  CHECK(t["function"]["name"] == "get_weather");
  CHECK(t["function"]["arguments"] == R"({"city":"Paris"})");
  CHECK(t["id"].get<std::string>().rfind("chatcmpl-tool-", 0) == 0);

  // A named tool_choice keeps "stop"; length stays "length"; without calls nothing changes.
  s.finish_tool_calls = false;
  chat_accumulator named(s);
  named.on_event(fin(0, two_calls, finish_reason::stop, 9));
  auto jn = named.build({"c", 1, "m"});
  CHECK(jn["choices"][0]["finish_reason"] == "stop");
  CHECK(jn["choices"][0]["message"]["content"] == "Let me check.\n\n");
  CHECK(jn["choices"][0]["message"]["tool_calls"].size() == 2);
  s.finish_tool_calls = true;
  chat_accumulator plain(s);
  plain.on_event(fin(0, "no calls here", finish_reason::stop, 3));
  auto jp = plain.build({"c", 1, "m"});
  CHECK(jp["choices"][0]["finish_reason"] == "stop");
  CHECK(jp["choices"][0]["message"]["content"] == "no calls here");
  CHECK(jp["choices"][0]["message"]["tool_calls"] == json::array());
}

TEST_CASE("tool calls: without the setting, blocks are plain content") {
  chat_accumulator acc(chat_output_settings{});
  acc.on_event(fin(0, two_calls, finish_reason::stop, 9));
  auto j = acc.build({"c", 1, "m"});
  CHECK(j["choices"][0]["message"]["content"] == two_calls);
  CHECK(j["choices"][0]["finish_reason"] == "stop");
}

TEST_CASE("tool calls: streamed as one delta per call, then a finish chunk with tool_calls") {
  chat_stream_settings s;
  s.output.tool_calls = tool_call_format::hermes;
  chat_stream st({"c", 1, "m"}, s);
  st.start();
  std::vector<json> chunks;
  int n = 0;
  for (std::size_t i = 0; i < two_calls.size(); i += 7)
    for (auto& c : st.on_event(tok(0, two_calls.substr(i, 7), ++n))) chunks.push_back(json::parse(c));
  for (auto& c : st.on_event(fin(0, "", finish_reason::stop, ++n))) chunks.push_back(json::parse(c));
  std::string content;
  std::vector<json> calls;
  int n_finish = 0;
  for (const auto& c : chunks) {
    const auto& ch = c["choices"][0];
    if (!ch["finish_reason"].is_null()) {
      ++n_finish;
      CHECK(ch["finish_reason"] == "tool_calls");
      CHECK(&c == &chunks.back());
    }
    const auto& d = ch["delta"];
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("tool_calls")) {
      CHECK(!d.contains("content"));
      REQUIRE(d["tool_calls"].size() == 1);
      calls.push_back(d["tool_calls"][0]);
    }
  }
  CHECK(n_finish == 1);
  CHECK(content == "Let me check.\n\n");
  REQUIRE(calls.size() == 2);
  for (int i = 0; i < 2; ++i) {
    CHECK(calls[i]["index"] == i);
    CHECK(calls[i]["type"] == "function");
    CHECK(calls[i]["id"].get<std::string>().rfind("chatcmpl-tool-", 0) == 0);
    CHECK(calls[i].contains("function"));
  }
  CHECK(calls[0]["function"]["name"] == "get_weather");
  CHECK(calls[1]["function"]["arguments"] == R"({"tz":"CET"})");
}

TEST_CASE("tool calls: llama3_json replies that are call objects become calls") {
  const auto L = tool_call_format::llama3_json;
  const std::string one = " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris; France\"}}";
  auto r = run({one}, L);
  CHECK(r.content.empty());
  REQUIRE(r.calls.size() == 1);
  CHECK(r.calls[0] == std::pair<std::string, std::string>{"get_weather", R"({"city":"Paris; France"})"});
  for (std::size_t i = 0; i <= one.size(); ++i) {
    auto c = run({one.substr(0, i), one.substr(i)}, L);
    CHECK(c.calls == r.calls);
    CHECK(c.content.empty());
  }
  auto two = run({R"({"name": "a", "parameters": {}}; {"name": "b", "arguments": {"x": 1}};)"}, L);
  REQUIRE(two.calls.size() == 2);
  CHECK(two.calls[1] == std::pair<std::string, std::string>{"b", R"({"x":1})"});
  auto list = run({R"([{"name": "a", "parameters": {}}, {"name": "b", "parameters": {"y": "z"}}])"}, L);
  CHECK(list.calls.size() == 2);
  // Not calls: plain text, JSON that is not a call, a half-written call; all content, unchanged.
  for (const std::string t : {"The weather is fine.", "{\"answer\": 42}", "{\"name\": \"a\", \"parameters\": {",
                              "  \n", R"({"name": "a", "parameters": {}}; hello)"}) {
    auto c = run({t}, L);
    CHECK(c.calls.empty());
    CHECK(c.content == t);
  }
  // Text first: streamed as it comes (nothing held back after the first non-blank character).
  tool_call_parser p(L);
  CHECK(p.push("  ").content.empty());
  CHECK(p.push("Hi {").content == "  Hi {");
  CHECK(p.push(" there").content == " there");
}

TEST_CASE("tool calls: named_arguments makes the whole reply one call of the named function") {
  const auto N = tool_call_format::named_arguments;
  const std::string args = " {\"city\": \"Paris\",\n \"n\": 2}";
  for (std::size_t i = 0; i <= args.size(); ++i) {
    auto r = run({args.substr(0, i), args.substr(i)}, N, "get_weather");
    CHECK(r.content.empty());
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0] == std::pair<std::string, std::string>{"get_weather", R"({"city":"Paris","n":2})"});
  }
  // Cut short (finish "length"): the arguments as written.
  auto cut = run({"{\"city\": \"Pa"}, N, "f");
  REQUIRE(cut.calls.size() == 1);
  CHECK(cut.calls[0].second == "{\"city\": \"Pa");
  tool_call_parser p(N, "f");
  CHECK(p.push("{").empty());  // nothing before the end
}

TEST_CASE("tool calls: the format comes from the chat template") {
  auto read = [](const char* name) {
    const char* shared = std::getenv("VKS_SHARED");
    REQUIRE(shared != nullptr);
    std::ifstream f(std::string(shared) + "/models/chat-templates/" + name);
    REQUIRE(f);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  CHECK(tool_call_format_of_template(read("Qwen-Qwen2.5-7B-Instruct.jinja")) == tool_call_format::hermes);
  CHECK(tool_call_format_of_template(read("Qwen-Qwen3-0.6B.jinja")) == tool_call_format::hermes);
  CHECK(tool_call_format_of_template(read("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja")) == tool_call_format::hermes);
  CHECK(tool_call_format_of_template(read("meta-llama-Llama-3.1-8B-Instruct.jinja")) == tool_call_format::llama3_json);
  CHECK(tool_call_format_of_template(read("meta-llama-Llama-3.2-3B-Instruct.jinja")) == tool_call_format::llama3_json);
  CHECK(tool_call_format_of_template(read("google-gemma-2-2b-it.jinja")) == tool_call_format::none);
}
