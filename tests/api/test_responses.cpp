// OpenAI Responses: the request translated into chat messages (input items, tools, formats,
// reasoning) and the response builders: the typed event stream replayed as the SDK does
// (items added, deltas, done events; sequence numbers increasing) equals the whole
// response for every cut of the text.
#include "catch.hpp"

#include <string>
#include <vector>

#include "api/responses_request.hpp"
#include "api/responses_response.hpp"

using namespace vks;
using namespace vks::api;
using engine::finish_reason;

namespace {

std::vector<engine::event> events_of(const std::string& text, const std::vector<std::size_t>& cuts,
                                     finish_reason reason = finish_reason::stop) {
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
  f.text = text.substr(at);
  f.tokens = {n};
  f.seq_usage = {10, ++n, 3};
  out.emplace_back(std::move(f));
  return out;
}

// Replays a stream: checks sequence numbers, the lifecycle and each item's events.
json replay(const std::vector<std::string>& payloads) {
  REQUIRE(payloads.size() >= 3);
  int seq = 0;
  json output = json::array();
  json last;
  for (const auto& p : payloads) {
    json ev = json::parse(p);
    CHECK(ev["sequence_number"] == seq++);
    const std::string type = ev["type"];
    if (seq == 1) CHECK(type == "response.created");
    if (seq == 2) CHECK(type == "response.in_progress");
    if (type == "response.output_item.added") {
      REQUIRE(ev["output_index"] == output.size());
      output.push_back(ev["item"]);
    } else if (type == "response.content_part.added") {
      output[ev["output_index"].get<std::size_t>()]["content"].push_back(ev["part"]);
    } else if (type == "response.output_text.delta" || type == "response.reasoning_text.delta") {
      json& item = output[ev["output_index"].get<std::size_t>()];
      CHECK(item["id"] == ev["item_id"]);
      json& part = item["content"][ev["content_index"].get<std::size_t>()];
      part["text"] = part["text"].get<std::string>() + ev["delta"].get<std::string>();
    } else if (type == "response.function_call_arguments.delta") {
      json& item = output[ev["output_index"].get<std::size_t>()];
      item["arguments"] = item["arguments"].get<std::string>() + ev["delta"].get<std::string>();
    } else if (type == "response.output_item.done") {
      json& item = output[ev["output_index"].get<std::size_t>()];
      json done = ev["item"];
      json mine = item;
      mine.erase("status");
      done.erase("status");
      CHECK(mine == done);  // what the deltas built is what the done event says
      item = ev["item"];
    } else if (type == "response.completed" || type == "response.incomplete") {
      last = ev["response"];
      CHECK(&p == &payloads.back());
    }
  }
  REQUIRE(last.is_object());
  CHECK(last["output"] == output);
  return last;
}

json without_ids(json output) {
  for (auto& item : output) {
    item.erase("id");
    item.erase("call_id");
  }
  return output;
}

void check_same(const responses_output_settings& s, const std::vector<engine::event>& events) {
  responses_accumulator acc(s);
  responses_stream st({"resp_1", 1, "m"}, s);
  std::vector<std::string> payloads = st.start();
  for (const auto& ev : events) {
    acc.on_event(ev);
    for (auto& p : st.on_event(ev)) payloads.push_back(std::move(p));
  }
  REQUIRE(acc.done());
  REQUIRE(st.done());
  const json whole = acc.build({"resp_1", 1, "m"});
  const json streamed = replay(payloads);
  CHECK(without_ids(streamed["output"]) == without_ids(whole["output"]));
  CHECK(streamed["status"] == whole["status"]);
  CHECK(streamed["usage"] == whole["usage"]);
  CHECK(streamed["incomplete_details"] == whole["incomplete_details"]);
  CHECK(st.final_response() == streamed);
}

responses_output_settings thinking_and_tools() {
  responses_output_settings s;
  s.text.reasoning = true;
  s.text.tool_calls = tool_call_format::hermes;
  s.echo = {{"instructions", nullptr}, {"store", true}};
  return s;
}

const std::string think_and_calls =
    "<think>plan: call f</think>Sure. <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
    "<tool_call>{\"name\":\"g\",\"arguments\":\"{}\"}</tool_call> done é";

}  // namespace

TEST_CASE("responses: stream == response for every cut (reasoning, message, function_call)") {
  for (const auto& text : {think_and_calls, std::string("just text")}) {
    for (std::size_t at = 0; at <= text.size(); ++at) {
      INFO("cut at " << at << " of " << text);
      check_same(thinking_and_tools(), events_of(text, {at}));
    }
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < text.size(); ++i) every.push_back(i);
    check_same(thinking_and_tools(), events_of(text, every));
    check_same(thinking_and_tools(), events_of(text, {3}, finish_reason::length));
  }
}

TEST_CASE("responses: items, status, usage, echo") {
  responses_accumulator acc(thinking_and_tools());
  for (const auto& ev : events_of(think_and_calls, {5})) acc.on_event(ev);
  const json r = acc.build({"resp_1", 7, "m"});
  CHECK(r["id"] == "resp_1");
  CHECK(r["object"] == "response");
  CHECK(r["created_at"] == 7);
  CHECK(r["status"] == "completed");
  CHECK(r["store"] == true);
  const json& out = r["output"];
  REQUIRE(out.size() == 5);
  CHECK(out[0]["type"] == "reasoning");
  CHECK(out[0]["content"][0] == json({{"type", "reasoning_text"}, {"text", "plan: call f"}}));
  CHECK(out[1]["type"] == "message");
  CHECK(out[1]["content"][0]["text"] == "Sure. ");
  CHECK(out[2]["type"] == "function_call");
  CHECK(out[2]["name"] == "f");
  CHECK(out[2]["arguments"] == "{\"a\":1}");
  CHECK(out[2]["call_id"].get<std::string>().rfind("call_", 0) == 0);
  CHECK(out[3]["name"] == "g");
  CHECK(out[4]["content"][0]["text"] == " done é");
  CHECK(r["usage"] == json({{"input_tokens", 10}, {"input_tokens_details", {{"cached_tokens", 3}}}, {"output_tokens", 2},
                           {"output_tokens_details", {{"reasoning_tokens", 0}}}, {"total_tokens", 12}}));
  // The output as the next turn's history: one assistant message.
  const json m = output_to_messages(out);
  REQUIRE(m.size() == 1);
  CHECK(m[0]["content"] == "Sure.  done é");
  CHECK(m[0]["reasoning_content"] == "plan: call f");
  CHECK(m[0]["tool_calls"][0]["function"]["arguments"] == json({{"a", 1}}));
  CHECK(m[0]["tool_calls"][0]["id"] == out[2]["call_id"]);

  responses_accumulator cut(responses_output_settings{});
  for (const auto& ev : events_of("abc", {1}, finish_reason::length)) cut.on_event(ev);
  const json inc = cut.build({"resp_2", 1, "m"});
  CHECK(inc["status"] == "incomplete");
  CHECK(inc["incomplete_details"] == json({{"reason", "max_output_tokens"}}));
}

TEST_CASE("responses request: input items become chat messages") {
  json body = {{"model", "m"},
               {"instructions", "Be brief."},
               {"input", json::array({
                             {{"role", "user"}, {"content", "weather?"}},
                             {{"type", "reasoning"}, {"id", "rs_1"}, {"summary", json::array({{{"type", "summary_text"}, {"text", "s"}}})},
                              {"content", json::array({{{"type", "reasoning_text"}, {"text", "need tool"}}})}},
                             {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "w"}, {"arguments", "{\"city\":\"Paris\"}"}},
                             {{"type", "function_call"}, {"call_id", "call_2"}, {"name", "w"}, {"arguments", "{\"city\":\"Rome\"}"}},
                             {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "sunny"}},
                             {{"type", "message"}, {"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", "ok"}}})}}})},
               {"tools", json::array({{{"type", "function"}, {"name", "w"}, {"parameters", {{"type", "object"}}}},
                                      {{"type", "web_search"}}, {{"type", "local_shell"}}})},
               {"max_output_tokens", 32},
               {"reasoning", {{"effort", "low"}}},
               {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", {{"type", "object"}}}}}}}};
  auto r = parse_responses_request(body);
  REQUIRE(r);
  const json& m = r->input_messages;
  REQUIRE(m.size() == 4);
  CHECK(m[0] == json({{"role", "user"}, {"content", "weather?"}}));
  CHECK(m[1]["role"] == "assistant");
  CHECK(m[1]["reasoning_content"] == "need tool");
  REQUIRE(m[1]["tool_calls"].size() == 2);
  CHECK(m[1]["tool_calls"][1]["function"]["arguments"] == json({{"city", "Rome"}}));
  CHECK(m[2] == json({{"role", "tool"}, {"content", "sunny"}, {"tool_call_id", "call_1"}}));
  CHECK(m[3] == json({{"role", "user"}, {"content", "ok"}}));
  CHECK(r->instructions == "Be brief.");
  CHECK(r->ignored_tools == std::vector<std::string>{"web_search", "local_shell"});
  REQUIRE(r->chat.tools.size() == 1);
  CHECK(r->chat.sampling.max_tokens == 32);
  CHECK(r->chat.chat_template_kwargs["reasoning_effort"] == "low");
  REQUIRE(r->chat.structured);
  CHECK(r->chat.structured->k == structured_output::kind::json_schema);
  CHECK(r->echo["max_output_tokens"] == 32);
  CHECK(r->echo["tools"].size() == 1);
  CHECK(r->echo.begin().key() == "instructions");
}

TEST_CASE("responses request: refusals name the parameter") {
  auto err = [](json body) {
    auto r = parse_responses_request(body);
    REQUIRE_FALSE(r);
    return r.error();
  };
  CHECK(err(json::object()).param == "input");
  CHECK(err({{"input", json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_image"}, {"image_url", "x"}}})}}})}})
            .message.find("text only") != std::string::npos);
  CHECK(err({{"input", "hi"}, {"tool_choice", "required"}}).param == "tool_choice");
  CHECK(err({{"input", "hi"}, {"text", {{"format", {{"type", "yaml"}}}}}}).param == "text.format.type");
  CHECK(err({{"input", "hi"}, {"reasoning", {{"effort", "huge"}}}}).param == "reasoning.effort");
  CHECK(err({{"input", "hi"}, {"background", true}}).param == "background");
  CHECK(err({{"input", json::array({{{"type", "item_reference"}, {"id", "x"}}})}}).param == "input[0].type");
  CHECK(parse_responses_request({{"input", "hi"}, {"tool_choice", "auto"}}));
}

TEST_CASE("responses request: a custom tool call from another server's history") {
  auto r = parse_responses_request({{"input", json::array({{{"role", "user"}, {"content", "patch it"}},
                                                          {{"type", "custom_tool_call"}, {"call_id", "c1"}, {"name", "apply_patch"}, {"input", "*** Begin"}},
                                                          {{"type", "custom_tool_call_output"}, {"call_id", "c1"}, {"output", "done"}}})},
                                    {"tools", json::array({{{"type", "custom"}, {"name", "apply_patch"}}})}});
  REQUIRE(r);
  REQUIRE(r->input_messages.size() == 3);
  CHECK(r->input_messages[1]["tool_calls"][0]["function"]["arguments"] == json({{"input", "*** Begin"}}));
  CHECK(r->input_messages[2] == json({{"role", "tool"}, {"content", "done"}, {"tool_call_id", "c1"}}));
  CHECK(r->ignored_tools == std::vector<std::string>{"custom"});
  CHECK(r->chat.tools.is_null());
}
