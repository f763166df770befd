// Anthropic Messages: the request translated into a chat request (system, blocks, tools,
// tool_choice, thinking, errors), and the response builders: the typed event stream
// replayed as the SDK does equals the whole message for every cut of the text (reasoning,
// text and tool calls), with the event order Anthropic documents.
#include "catch.hpp"

#include <string>
#include <vector>

#include "api/messages_request.hpp"
#include "api/messages_response.hpp"

using namespace vks;
using namespace vks::api;
using engine::finish_reason;

namespace {

json body_with(json extra) {
  json b = {{"model", "m"}, {"max_tokens", 16}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
  return b;
}

std::vector<engine::event> events_of(const std::string& text, const std::vector<std::size_t>& cuts,
                                     finish_reason reason = finish_reason::stop, engine::stop_reason stop = {}) {
  std::vector<engine::event> out;
  std::size_t at = 0;
  int n = 0;
  for (std::size_t c : cuts) {
    if (c < text.size() && (static_cast<unsigned char>(text[c]) & 0xC0) == 0x80) continue;
    engine::token_event t;
    t.text = text.substr(at, c - at);
    t.tokens = {n};
    t.n_completion_tokens = ++n;
    out.emplace_back(std::move(t));
    at = c;
  }
  engine::finished_event f;
  f.reason = reason;
  f.stop = std::move(stop);
  f.text = text.substr(at);
  f.tokens = {n};
  f.seq_usage = {12, ++n, 4};
  out.emplace_back(std::move(f));
  return out;
}

// The stream replayed as a client does, with the order checked on the way.
json replay(const std::vector<std::string>& payloads, json& final_delta) {
  REQUIRE(payloads.size() >= 4);
  json message = json::parse(payloads[0]);
  REQUIRE(message["type"] == "message_start");
  CHECK(json::parse(payloads[1])["type"] == "ping");
  json msg = message["message"];
  CHECK(msg["content"].empty());
  CHECK(msg["stop_reason"].is_null());
  std::vector<std::string> partial;
  int open = -1;
  for (std::size_t i = 2; i + 2 < payloads.size(); ++i) {
    json ev = json::parse(payloads[i]);
    const std::string type = ev["type"];
    if (type == "content_block_start") {
      REQUIRE(open == -1);
      open = ev["index"];
      REQUIRE(open == static_cast<int>(msg["content"].size()));
      msg["content"].push_back(ev["content_block"]);
      partial.emplace_back();
    } else if (type == "content_block_delta") {
      REQUIRE(ev["index"] == open);
      json& b = msg["content"][static_cast<std::size_t>(open)];
      const json& d = ev["delta"];
      if (d["type"] == "text_delta") b["text"] = b["text"].get<std::string>() + d["text"].get<std::string>();
      else if (d["type"] == "thinking_delta") b["thinking"] = b["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      else if (d["type"] == "input_json_delta") partial.back() += d["partial_json"].get<std::string>();
      else FAIL("unknown delta " << d.dump());
    } else if (type == "content_block_stop") {
      REQUIRE(ev["index"] == open);
      json& b = msg["content"][static_cast<std::size_t>(open)];
      if (b["type"] == "tool_use") b["input"] = json::parse(partial.back());
      open = -1;
    } else {
      FAIL("unexpected event " << type);
    }
  }
  CHECK(open == -1);
  final_delta = json::parse(payloads[payloads.size() - 2]);
  REQUIRE(final_delta["type"] == "message_delta");
  CHECK(json::parse(payloads.back())["type"] == "message_stop");
  msg["stop_reason"] = final_delta["delta"]["stop_reason"];
  msg["stop_sequence"] = final_delta["delta"]["stop_sequence"];
  return msg;
}

// Tool ids are random: compare blocks without them.
json without_ids(json content) {
  for (auto& b : content)
    if (b["type"] == "tool_use") {
      CHECK(b["id"].get<std::string>().rfind("toolu_", 0) == 0);
      b.erase("id");
    }
  return content;
}

void check_same(const messages_output_settings& s, const std::vector<engine::event>& events) {
  messages_accumulator acc(s);
  messages_stream st({"msg_1", 1, "m"}, s);
  std::vector<std::string> payloads = st.start();
  for (const auto& ev : events) {
    acc.on_event(ev);
    for (auto& p : st.on_event(ev)) payloads.push_back(std::move(p));
  }
  REQUIRE(acc.done());
  REQUIRE(st.done());
  const json whole = acc.build({"msg_1", 1, "m"});
  json delta;
  const json streamed = replay(payloads, delta);
  CHECK(without_ids(streamed["content"]) == without_ids(whole["content"]));
  CHECK(streamed["stop_reason"] == whole["stop_reason"]);
  CHECK(streamed["stop_sequence"] == whole["stop_sequence"]);
  CHECK(delta["usage"] == whole["usage"]);
}

messages_output_settings thinking_and_tools() {
  messages_output_settings s;
  s.text.reasoning = true;
  s.text.tool_calls = tool_call_format::hermes;
  s.n_prompt_tokens = 12;
  return s;
}

const std::string think_and_calls =
    "<think>plan: call f</think>Sure. <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
    "<tool_call>{\"name\":\"g\",\"arguments\":\"{}\"}</tool_call> done é";
const std::string open_call = "<think>x</think>\n\n<tool_call>{\"name\":\"h\",\"arguments\":{\"q\":[1,2]}}";

}  // namespace

TEST_CASE("messages: stream == message for every cut (thinking, text, tool_use)") {
  for (const auto& text : {think_and_calls, open_call, std::string("plain text, no tags")}) {
    for (std::size_t at = 0; at <= text.size(); ++at) {
      INFO("cut at " << at << " of " << text);
      check_same(thinking_and_tools(), events_of(text, {at}));
    }
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < text.size(); ++i) every.push_back(i);
    check_same(thinking_and_tools(), events_of(text, every));
  }
}

TEST_CASE("messages: forced calls (named and required formats) for every cut") {
  for (auto [format, text] : {std::pair{tool_call_format::named_arguments, std::string(R"({"zone": "UTC"})")},
                              std::pair{tool_call_format::llama3_json, std::string(R"([{"name": "t", "parameters": {"z": 1}}])")}}) {
    messages_output_settings s;
    s.text.tool_calls = format;
    s.text.tool_name = "t";
    for (std::size_t at = 0; at <= text.size(); ++at) check_same(s, events_of(text, {at}));
    messages_accumulator acc(s);
    for (const auto& ev : events_of(text, {2, 7})) acc.on_event(ev);
    const json m = acc.build({"msg", 1, "m"});
    REQUIRE(m["content"].size() == 1);
    CHECK(m["content"][0]["type"] == "tool_use");
    CHECK(m["content"][0]["name"] == "t");
    CHECK(m["stop_reason"] == "tool_use");
  }
}

TEST_CASE("messages: blocks in the order of the text, stop_reason and usage") {
  messages_accumulator acc(thinking_and_tools());
  for (const auto& ev : events_of(think_and_calls, {})) acc.on_event(ev);
  const json m = acc.build({"msg_1", 1, "m"});
  REQUIRE(m["content"].size() == 5);
  CHECK(m["content"][0] == json({{"type", "thinking"}, {"thinking", "plan: call f"}, {"signature", ""}}));
  CHECK(m["content"][1] == json({{"type", "text"}, {"text", "Sure. "}}));
  CHECK(m["content"][2]["type"] == "tool_use");
  CHECK(m["content"][2]["name"] == "f");
  CHECK(m["content"][2]["input"] == json({{"a", 1}}));
  CHECK(m["content"][3]["name"] == "g");
  CHECK(m["content"][3]["input"] == json::object());
  CHECK(m["content"][4] == json({{"type", "text"}, {"text", " done é"}}));
  CHECK(m["stop_reason"] == "tool_use");
  CHECK(m["usage"] == json({{"input_tokens", 8}, {"cache_creation_input_tokens", 0},
                           {"cache_read_input_tokens", 4}, {"output_tokens", 1}}));
  // Blank text between and around calls makes no block.
  messages_accumulator blank(thinking_and_tools());
  for (const auto& ev : events_of(open_call, {3, 20})) blank.on_event(ev);
  const json b = blank.build({"msg_2", 1, "m"});
  REQUIRE(b["content"].size() == 2);
  CHECK(b["content"][1]["input"] == json({{"q", {1, 2}}}));
}

TEST_CASE("messages: stop reasons") {
  messages_output_settings s;
  auto reason = [&](finish_reason r, engine::stop_reason stop) {
    messages_accumulator acc(s);
    for (const auto& ev : events_of("abc", {1}, r, std::move(stop))) acc.on_event(ev);
    const json m = acc.build({"msg", 1, "m"});
    return std::make_pair(m["stop_reason"].get<std::string>(), m["stop_sequence"]);
  };
  CHECK(reason(finish_reason::stop, {}).first == "end_turn");
  CHECK(reason(finish_reason::length, {}).first == "max_tokens");
  CHECK(reason(finish_reason::stop, std::string("END")) == std::make_pair(std::string("stop_sequence"), json("END")));
  CHECK(reason(finish_reason::stop, engine::token_id{2}).first == "end_turn");
}

TEST_CASE("messages: an error event is an Anthropic error payload") {
  messages_stream st({"msg", 1, "m"}, {});
  st.start();
  engine::error_event e;
  e.err = make_error(errc::overloaded, "busy");
  auto out = st.on_event(e);
  REQUIRE(out.size() == 1);
  CHECK(json::parse(out[0]) == json({{"type", "error"}, {"error", {{"type", "rate_limit_error"}, {"message", "busy"}}}}));
  CHECK(st.done());
  CHECK(anthropic_error_type(400) == "invalid_request_error");
  CHECK(anthropic_error_type(503) == "overloaded_error");
  CHECK(anthropic_error_type(500) == "api_error");
}

TEST_CASE("messages request: system, blocks and history become chat messages") {
  json body = body_with({{"system", json::array({{{"type", "text"}, {"text", "x-anthropic-billing-header: cc_version=2.1.37.0d9; cch=fa690;"}},
                                                  {{"type", "text"}, {"text", "You are helpful."}, {"cache_control", {{"type", "ephemeral"}}}}})},
                         {"messages", json::array({
                                          {{"role", "user"}, {"content", "weather?"}},
                                          {{"role", "assistant"},
                                           {"content", json::array({{{"type", "thinking"}, {"thinking", "need tool"}, {"signature", "s"}},
                                                                    {{"type", "redacted_thinking"}, {"data", "xyz"}},
                                                                    {{"type", "text"}, {"text", "Checking."}},
                                                                    {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "w"}, {"input", {{"city", "Paris"}}}}})}},
                                          {{"role", "user"},
                                           {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_1"},
                                                                     {"content", json::array({{{"type", "text"}, {"text", "sunny"}}})}},
                                                                    {{"type", "text"}, {"text", "thanks"}}})}}})}});
  auto r = parse_messages_request(body);
  REQUIRE(r);
  const json& m = r->chat.messages;
  REQUIRE(m.size() == 5);
  CHECK(m[0] == json({{"role", "system"}, {"content", "You are helpful."}}));
  CHECK(m[1] == json({{"role", "user"}, {"content", "weather?"}}));
  CHECK(m[2]["content"] == "Checking.");
  CHECK(m[2]["reasoning_content"] == "need tool");
  CHECK(m[2]["tool_calls"][0]["function"]["arguments"] == json({{"city", "Paris"}}));
  CHECK(m[2]["tool_calls"][0]["id"] == "toolu_1");
  CHECK(m[3] == json({{"role", "tool"}, {"content", "sunny"}, {"tool_call_id", "toolu_1"}}));
  CHECK(m[4] == json({{"role", "user"}, {"content", "thanks"}}));
  CHECK(r->chat.sampling.max_tokens == 16);
  CHECK(strip_attribution("x-anthropic-billing-header: a;\nkeep\nx-anthropic-billing-header: b") == "keep\n");
}

TEST_CASE("messages request: tools, tool_choice, thinking, stop_sequences") {
  json tools = json::array({{{"name", "w"}, {"description", "weather"}, {"input_schema", {{"type", "object"}}}},
                            {{"type", "web_search_20250305"}, {"name", "web_search"}, {"max_uses", 5}}});
  auto r = parse_messages_request(body_with({{"tools", tools}, {"tool_choice", {{"type", "tool"}, {"name", "w"}}},
                                             {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}},
                                             {"stop_sequences", {"END"}}, {"metadata", {{"user_id", "u"}}},
                                             {"temperature", 0.5}, {"top_k", 5}}));
  REQUIRE(r);
  REQUIRE(r->chat.tools.size() == 1);
  CHECK(r->chat.tools[0]["function"]["parameters"] == json({{"type", "object"}}));
  CHECK(r->ignored_tools == std::vector<std::string>{"web_search"});
  CHECK(r->chat.tool_choice == tool_choice_mode::named);
  CHECK(r->chat.tool_choice_name == "w");
  CHECK(r->chat.chat_template_kwargs["enable_thinking"] == true);
  CHECK(r->chat.sampling.stop == std::vector<std::string>{"END"});
  CHECK(r->chat.sampling.top_k == 5);
  auto any = parse_messages_request(body_with({{"tools", tools}, {"tool_choice", {{"type", "any"}, {"disable_parallel_tool_use", true}}}}));
  REQUIRE(any);
  CHECK(any->chat.tool_choice == tool_choice_mode::required);
  CHECK_FALSE(any->chat.parallel_tool_calls);
  auto none = parse_messages_request(body_with({{"tools", tools}, {"tool_choice", {{"type", "none"}}}}));
  REQUIRE(none);
  CHECK(none->chat.tool_choice == tool_choice_mode::none);
  auto server_only = parse_messages_request(body_with({{"tools", json::array({tools[1]})}, {"tool_choice", {{"type", "auto"}}}}));
  REQUIRE(server_only);
  CHECK(server_only->chat.tools.is_null());
  CHECK(server_only->chat.tool_choice == tool_choice_mode::none);
}

TEST_CASE("messages request: refusals name the parameter") {
  auto err = [](json body) {
    auto r = parse_messages_request(body);
    REQUIRE_FALSE(r);
    return r.error();
  };
  json no_max = body_with({});
  no_max.erase("max_tokens");
  CHECK(err(no_max).param == "max_tokens");
  CHECK(parse_messages_request(no_max, {}, /*count_only=*/true));
  auto image = err(body_with({{"messages", json::array({{{"role", "user"}, {"content", json::array({{{"type", "image"}, {"source", json::object()}}})}}})}}));
  CHECK(image.message.find("text only") != std::string::npos);
  CHECK(err(body_with({{"messages", json::array({{{"role", "system"}, {"content", "x"}}})}})).param == "messages[0].role");
  CHECK(err(body_with({{"tool_choice", {{"type", "tool"}, {"name", "x"}}}})).param == "tool_choice");
  CHECK(err(body_with({{"tools", json::array({{{"name", "w"}}})}})).param == "tools[0].input_schema");
  CHECK(err(body_with({{"thinking", {{"type", "sometimes"}}}})).param == "thinking");
  CHECK(err(body_with({{"messages", json::array({{{"role", "user"}, {"content", json::array({{{"type", "tool_use"}, {"id", "a"}, {"name", "b"}}})}}})}})).param ==
        "messages[0].content[0]");
  CHECK(err(body_with({{"n", 2}})).param == "n");
}
