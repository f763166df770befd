// Streaming and non-streaming deliver the same thing: the same generated text, cut into
// engine events at every position (and one character per event), goes through a stream
// builder and an accumulator; the streamed deltas joined must equal the accumulated
// response (content, reasoning, tool calls, logprobs, token ids, finish reason) for every
// choice, with n > 1 and the choices' events interleaved. Also the choice_text pipeline
// and the choice_tracker on their own.
#include "catch.hpp"

#include <memory>
#include <string>
#include <vector>

#include "api/chat_response.hpp"
#include "api/choice_text.hpp"
#include "api/choice_tracker.hpp"
#include "api/completion_response.hpp"
#include "api/lmi_response.hpp"

using namespace vks;
using namespace vks::api;
using engine::finish_reason;

namespace {

// One generated piece: its text, one token id and a logprob for it.
engine::position_logprobs lp_of(engine::token_id id, const std::string& text) {
  engine::position_logprobs p;
  p.token = {id, -0.5f * static_cast<float>(id % 7), 0, text};
  return p;
}

// The events of one choice: `text` cut at `cuts` (ascending; a cut inside a UTF-8
// character is skipped: the engine never splits one), the last piece on the finished event. Token ids count up from `first_id`; n_completion_tokens is cumulative.
std::vector<engine::event> events_of(int seq, const std::string& text, const std::vector<std::size_t>& cuts,
                                     engine::token_id first_id, int n_prompt, int n_cached = 0) {
  std::vector<engine::event> out;
  std::size_t at = 0;
  int n = 0;
  for (std::size_t c : cuts) {
    if (c < text.size() && (static_cast<unsigned char>(text[c]) & 0xC0) == 0x80) continue;
    engine::token_event t;
    t.seq = seq;
    t.text = text.substr(at, c - at);
    t.tokens = {first_id + n};
    t.logprobs = {lp_of(first_id + n, t.text)};
    t.n_completion_tokens = ++n;
    out.emplace_back(std::move(t));
    at = c;
  }
  engine::finished_event f;
  f.seq = seq;
  f.reason = finish_reason::stop;
  f.text = text.substr(at);
  f.tokens = {first_id + n};
  f.logprobs = {lp_of(first_id + n, f.text)};
  f.seq_usage = {n_prompt, ++n, n_cached};
  out.emplace_back(std::move(f));
  return out;
}

std::vector<std::size_t> one_cut(std::size_t at) { return {at}; }
std::vector<std::size_t> every_char(std::size_t n) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < n; ++i) cuts.push_back(i);
  return cuts;
}

// Events of several choices interleaved one by one (choice 0 first).
std::vector<engine::event> interleave(const std::vector<std::vector<engine::event>>& per_choice) {
  std::vector<engine::event> out;
  for (std::size_t k = 0;; ++k) {
    bool any = false;
    for (const auto& evs : per_choice)
      if (k < evs.size()) {
        out.push_back(evs[k]);
        any = true;
      }
    if (!any) return out;
  }
}

// What a client makes of one chat choice.
struct chat_seen {
  std::string content, reasoning;
  bool content_null = false;
  json calls = json::array();  // [{name, arguments}]
  json warnings = json::array();
  json logprobs = json::array();
  json token_ids = json::array();
  json finish;
};

chat_seen joined_stream(const std::vector<std::string>& chunks, std::size_t index) {
  chat_seen s;
  for (const auto& text : chunks) {
    auto j = json::parse(text);
    REQUIRE(j["choices"].size() == 1);
    const auto& c = j["choices"][0];
    if (c["index"] != index) continue;
    const auto& d = c["delta"];
    if (d.contains("role")) continue;
    if (d.contains("content")) s.content += d["content"].get<std::string>();
    if (d.contains("reasoning")) {
      CHECK(d["reasoning_content"] == d["reasoning"]);
      s.reasoning += d["reasoning"].get<std::string>();
    }
    if (d.contains("tool_calls"))
      for (const auto& t : d["tool_calls"]) {
        CHECK(t["index"] == s.calls.size());
        s.calls.push_back({{"name", t["function"]["name"]}, {"arguments", t["function"]["arguments"]}});
      }
    if (!c["logprobs"].is_null())
      for (const auto& e : c["logprobs"]["content"]) s.logprobs.push_back(e);
    if (c.contains("token_ids"))
      for (const auto& id : c["token_ids"]) s.token_ids.push_back(id);
    if (c.contains("warnings"))
      for (const auto& w : c["warnings"]) s.warnings.push_back(w);
    if (!c["finish_reason"].is_null()) {
      CHECK(s.finish.is_null());  // one finish chunk per choice
      s.finish = c["finish_reason"];
    }
  }
  return s;
}

chat_seen accumulated(const json& response, std::size_t index) {
  chat_seen s;
  const auto& c = response["choices"][index];
  const auto& m = c["message"];
  s.content_null = m["content"].is_null();
  if (!s.content_null) s.content = m["content"];
  if (m.contains("reasoning") && !m["reasoning"].is_null()) s.reasoning = m["reasoning"];
  for (const auto& t : m["tool_calls"])
    s.calls.push_back({{"name", t["function"]["name"]}, {"arguments", t["function"]["arguments"]}});
  if (!c["logprobs"].is_null()) s.logprobs = c["logprobs"]["content"];
  if (c.contains("token_ids")) s.token_ids = c["token_ids"];
  if (c.contains("warnings")) s.warnings = c["warnings"];
  s.finish = c["finish_reason"];
  return s;
}

// Streams and accumulates the same events; every choice must come out the same.
void check_chat_same(const chat_output_settings& out, const std::vector<engine::event>& events) {
  chat_accumulator acc(out);
  chat_stream_settings ss;
  ss.output = out;
  ss.include_usage = true;
  chat_stream st({"c", 1, "m"}, ss);
  std::vector<std::string> chunks = st.start();
  for (const auto& ev : events) {
    acc.on_event(ev);
    for (auto& c : st.on_event(ev)) chunks.push_back(std::move(c));
  }
  REQUIRE(acc.done());
  REQUIRE(st.done());
  auto usage = st.finish();
  REQUIRE(usage.size() == 1);
  const json whole = acc.build({"c", 1, "m"});
  CHECK(json::parse(usage[0])["usage"] == whole["usage"]);
  for (int i = 0; i < out.n; ++i) {
    INFO("choice " << i);
    const auto a = accumulated(whole, static_cast<std::size_t>(i));
    const auto s = joined_stream(chunks, static_cast<std::size_t>(i));
    if (a.content_null)  // only calls or only reasoning: null content, the stream sent blanks at most
      CHECK(s.content.find_first_not_of(" \t\r\n") == std::string::npos);
    else
      CHECK(s.content == a.content);
    CHECK(s.reasoning == a.reasoning);
    CHECK(s.calls == a.calls);
    CHECK(s.warnings == a.warnings);
    CHECK(s.logprobs == a.logprobs);
    CHECK(s.token_ids == a.token_ids);
    CHECK(s.finish == a.finish);
  }
}

const std::string think_and_calls =
    "<think>plan: call f</think>Sure. <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
    "<tool_call>{\"name\":\"g\",\"arguments\":\"{}\"}</tool_call> done";
const std::string think_no_calls = "<think>no tools <tool_call></think>Just <tool a tag</tool_call> text";
const std::string open_call = "<think>x</think><tool_call>{\"name\":\"h\",\"arguments\":{\"q\":[1,2]}}";
const std::string never_closed = "<think>thinking until the end <tool_call>";

chat_output_settings reasoning_and_tools(int n) {
  chat_output_settings s;
  s.n = n;
  s.reasoning = true;
  s.tool_calls = tool_call_format::hermes;
  s.logprobs = true;
  s.prompt_token_ids = token_id_list{5, 6, 7};
  return s;
}

}  // namespace

TEST_CASE("chat: stream == accumulator for every cut (reasoning, tool calls, n = 4)") {
  const std::vector<std::string> texts{think_and_calls, think_no_calls, open_call, never_closed};
  for (bool include_reasoning : {true, false}) {
    auto out = reasoning_and_tools(static_cast<int>(texts.size()));
    out.include_reasoning = include_reasoning;
    for (std::size_t at = 0; at <= think_and_calls.size(); ++at) {
      INFO("cut at " << at << ", include_reasoning " << include_reasoning);
      std::vector<std::vector<engine::event>> per;
      for (std::size_t i = 0; i < texts.size(); ++i)
        per.push_back(events_of(static_cast<int>(i), texts[i], one_cut(std::min(at, texts[i].size())),
                                static_cast<engine::token_id>(100 * i), 9));
      check_chat_same(out, interleave(per));
    }
    std::vector<std::vector<engine::event>> per;
    for (std::size_t i = 0; i < texts.size(); ++i)
      per.push_back(events_of(static_cast<int>(i), texts[i], every_char(texts[i].size()),
                              static_cast<engine::token_id>(1000 * i), 9));
    check_chat_same(out, interleave(per));
  }
}

TEST_CASE("chat: stream == accumulator for every cut (llama3_json and named tool calls, no reasoning)") {
  const std::string llama = R"({"name": "f", "parameters": {"x": "a;b"}}; {"name": "g", "parameters": {}})";
  for (auto [format, text] : {std::pair{tool_call_format::llama3_json, llama},
                              std::pair{tool_call_format::llama3_json, std::string("plain reply {not json")},
                              std::pair{tool_call_format::named_arguments, std::string(R"({ "city" : "Paris" })")}}) {
    chat_output_settings out;
    out.n = 2;
    out.tool_calls = format;
    out.tool_name = "get_weather";
    out.finish_tool_calls = format != tool_call_format::named_arguments;
    for (std::size_t at = 0; at <= text.size(); ++at) {
      INFO("cut at " << at << ": " << text);
      check_chat_same(out, interleave({events_of(0, text, one_cut(at), 0, 3), events_of(1, text, every_char(text.size()), 50, 3)}));
    }
  }
}

TEST_CASE("chat: stream == accumulator for every cut (harmony, Qwen3 XML, fail-closed warnings)") {
  const std::string harmony =
      "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json"
      "<|message|>{\"a\": 1}<|call|><|start|>assistant<|channel|>commentary to=functions.f<|message|>{\"a\": ";
  const std::string xml = "<think>r <tool_call><function=f><parameter=a>1</parameter></function></tool_call></think>ok "
                          "<tool_call><function=g></function></tool_call>";
  for (auto [format, text] : {std::pair{tool_call_format::harmony, harmony}, std::pair{tool_call_format::qwen3_xml, xml}}) {
    chat_output_settings out;
    out.n = 2;
    out.reasoning = true;
    out.tool_calls = format;
    out.tools = std::make_shared<tool_catalog>(tool_catalog::from_tools(
        json::parse(R"([{"type": "function", "function": {"name": "f"}}])")));
    for (std::size_t at = 0; at <= text.size(); ++at) {
      INFO("cut at " << at << ": " << text);
      check_chat_same(out, interleave({events_of(0, text, one_cut(at), 0, 3), events_of(1, text, every_char(text.size()), 50, 3)}));
    }
    // The whole response: one call, one block kept as content with a warning.
    chat_accumulator acc(out);
    for (const auto& ev : events_of(0, text, {}, 0, 3)) acc.on_event(ev);
    for (const auto& ev : events_of(1, text, {}, 0, 3)) acc.on_event(ev);
    const json whole = acc.build({"c", 1, "m"});
    CHECK(whole["choices"][0]["message"]["tool_calls"].size() == 1);
    CHECK(whole["choices"][0]["warnings"].size() == 1);
    CHECK(whole["choices"][0]["finish_reason"] == "tool_calls");
  }
}

TEST_CASE("completions: stream == accumulator for every cut (2 prompts x n = 2, echo, logprobs, token ids)") {
  const std::vector<std::string> texts{"Hello, wor\xC3\xA9ld!", " and more"};
  completion_output_settings out;
  out.n_prompts = 2;
  out.n = 2;
  out.echo = true;
  out.prompt_texts = {"P0", "Prompt 1"};
  out.logprobs = 0;
  out.return_token_ids = true;
  out.prompt_token_ids = {{1, 2}, {3}};
  for (std::size_t at = 0; at <= texts[0].size(); ++at) {
    INFO("cut at " << at);
    completion_accumulator acc(out);
    completion_stream_settings ss;
    ss.output = out;
    ss.include_usage = true;
    completion_stream st({"cmpl", 1, "m"}, ss);
    std::vector<std::string> chunks;
    for (int p = 0; p < 2; ++p) {
      const auto& t = texts[static_cast<std::size_t>(p)];
      auto evs = interleave({events_of(0, t, one_cut(std::min(at, t.size())), 10, 4 + p, p),
                             events_of(1, t, every_char(t.size()), 20, 4 + p, 1)});
      for (const auto& ev : evs) {
        acc.on_event(p, ev);
        for (auto& c : st.on_event(p, ev)) chunks.push_back(std::move(c));
      }
    }
    REQUIRE(acc.done());
    REQUIRE(st.done());
    const json whole = acc.build({"cmpl", 1, "m"});
    auto last = st.finish();
    REQUIRE(last.size() == 1);
    CHECK(json::parse(last[0])["usage"] == whole["usage"]);
    CHECK(whole["usage"]["prompt_tokens"] == 9);
    for (std::size_t i = 0; i < 4; ++i) {
      INFO("choice " << i);
      std::string text;
      json lp = {{"text_offset", json::array()}, {"token_logprobs", json::array()}, {"tokens", json::array()},
                 {"top_logprobs", json::array()}};
      json ids = json::array(), prompt_ids, finish;
      for (const auto& c : chunks) {
        auto j = json::parse(c)["choices"][0];
        if (j["index"] != i) continue;
        text += j["text"].get<std::string>();
        if (!j["logprobs"].is_null())
          for (auto& [k, v] : j["logprobs"].items())
            for (const auto& x : v) lp[k].push_back(x);
        for (const auto& id : j["token_ids"]) ids.push_back(id);
        if (j.contains("prompt_token_ids")) {
          CHECK(prompt_ids.is_null());
          prompt_ids = j["prompt_token_ids"];
        }
        if (!j["finish_reason"].is_null()) finish = j["finish_reason"];
      }
      const auto& w = whole["choices"][i];
      CHECK(text == w["text"]);
      CHECK(lp == w["logprobs"]);
      CHECK(ids == w["token_ids"]);
      CHECK(prompt_ids == w["prompt_token_ids"]);
      CHECK(finish == w["finish_reason"]);
    }
  }
}

TEST_CASE("LMI: stream == accumulator for every cut") {
  const std::string text = "The answer is 42.";
  lmi_output_settings out;
  out.prompt_text = "Q: ";
  out.details = true;
  out.return_full_text = true;
  for (std::size_t at = 0; at <= text.size(); ++at) {
    INFO("cut at " << at);
    lmi_accumulator acc(out);
    lmi_stream st(out);
    std::vector<std::string> lines;
    for (const auto& ev : events_of(0, text, one_cut(at), 7, 3)) {
      acc.on_event(ev);
      for (auto& l : st.on_event(ev)) lines.push_back(std::move(l));
    }
    REQUIRE(acc.done());
    REQUIRE(st.done());
    const json whole = acc.build();
    REQUIRE(!lines.empty());
    json tokens = json::array();
    for (const auto& l : lines) tokens.push_back(json::parse(l)["token"]);
    const json last = json::parse(lines.back());
    CHECK(last["generated_text"] == whole["generated_text"]);
    CHECK(last["details"] == whole["details"]);
    CHECK(tokens == whole["details"]["tokens"]);
  }
}

TEST_CASE("choice_text: reasoning split, then tool calls from the content part; flush judges the rest") {
  choice_text_settings s;
  s.reasoning = true;
  s.tool_calls = tool_call_format::hermes;
  choice_text t(s);
  auto a = t.push("<think>a <tool_call>b</think>c<tool_");
  CHECK(a.reasoning == "a <tool_call>b");  // tool calls are not looked for in reasoning
  CHECK(a.content == "c");
  CHECK(a.calls.empty());
  auto b = t.push("call>{\"name\":\"f\",\"arguments\":{}}</tool_call>d");
  CHECK(b.reasoning.empty());
  REQUIRE(b.calls.size() == 1);
  CHECK(b.calls[0].name == "f");
  CHECK(b.calls[0].arguments == "{}");
  CHECK(b.content == "d");
  auto c = t.push("<tool_call>{\"name\":\"g\",\"arguments\":{\"k\":1}}");
  CHECK(c.empty());
  auto d = t.flush();
  REQUIRE(d.calls.size() == 1);  // an open block at the end is judged
  CHECK(d.calls[0].arguments == R"({"k":1})");
  choice_text plain(choice_text_settings{});
  CHECK(plain.push("<think>x").content == "<think>x");
  CHECK(plain.flush().empty());
}

TEST_CASE("choice_tracker: bounds, one finish per choice, usage per prompt, the error") {
  choice_tracker tr(2, 2);
  CHECK(tr.running(0, 0) == 0);
  CHECK(tr.running(1, 1) == 3);
  CHECK(!tr.running(0, 2));
  CHECK(!tr.running(2, 0));
  CHECK(!tr.running(-1, 0));
  CHECK(!tr.running(0, -1));
  int n_tokens = 0, n_finished = 0;
  auto feed = [&](int p, engine::event ev) {
    route_event(tr, p, ev,
                overloaded{[&](int, const engine::token_event&) { ++n_tokens; },
                           [&](int, const engine::finished_event&) { ++n_finished; },
                           [](int, const engine::prompt_logprobs_event&) {}, [](const engine::error_event&) {}});
  };
  for (const auto& ev : events_of(1, "ab", {1}, 0, 5, 2)) feed(0, ev);
  CHECK(n_tokens == 1);
  CHECK(n_finished == 1);
  CHECK(!tr.running(0, 1));
  for (const auto& ev : events_of(1, "ab", {1}, 0, 5, 2)) feed(0, ev);  // finished: dropped
  CHECK(n_tokens == 1);
  CHECK(n_finished == 1);
  feed(3, events_of(0, "x", {}, 0, 1)[0]);  // no such prompt
  CHECK(n_finished == 1);
  for (const auto& ev : events_of(0, "abc", {1, 2}, 0, 5, 4)) feed(0, ev);
  for (const auto& ev : events_of(0, "abcd", {}, 0, 7, 0)) feed(1, ev);
  CHECK(tr.n_completion_tokens(0) == 3);
  CHECK(!tr.done());
  auto u = tr.usage();
  CHECK(u.prompt_tokens == 12);  // each prompt once
  CHECK(u.cached_tokens == 4);   // the largest of prompt 0's sequences
  CHECK(u.completion_tokens == 2 + 3 + 1);
  engine::error_event e{make_error(errc::internal, "boom")};
  feed(1, e);
  CHECK(tr.done());
  REQUIRE(tr.error());
  CHECK(tr.error()->message == "boom");
  feed(1, events_of(1, "z", {}, 0, 7)[0]);  // after the error: dropped
  CHECK(n_finished == 3);
}
