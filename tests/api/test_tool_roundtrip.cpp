// Template round trips (#24): the assistant message vkserve returns (tool_calls with
// arguments as JSON text and our ids, reasoning_content), sent back in a request's history
// and normalised by parse_chat_request, renders through each family's shared chat template
// in the model's own format, and that rendering, parsed by the family's detected parser,
// gives back the same calls. The rendered reply is what the template adds after the
// generation prompt of the history before it.
#include "catch.hpp"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/choice_text.hpp"
#include "api/harmony.hpp"
#include "api/reasoning.hpp"
#include "api/strict_tools.hpp"
#include "api/tool_call_syntax.hpp"
#include "api/tool_calls.hpp"
#include "text/jinja/chat_template.hpp"

using namespace vks;
using namespace vks::api;

namespace {

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

const json k_tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
  "description": "Weather of a city.", "parameters": {"type": "object", "properties": {
  "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}])");

std::string render(const text::jinja::chat_template& t, const json& messages, bool generation_prompt) {
  text::jinja::chat_inputs in;
  in.messages = messages;
  in.tools = k_tools;
  in.add_generation_prompt = generation_prompt;
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  auto out = t.render(text::jinja::build_context(in));
  INFO((out ? std::string() : out.error().message));
  REQUIRE(out);
  return *out;
}

struct reply {
  std::vector<tool_call> calls;
  std::string reasoning;
};

// The reply as a chat request's history normalises it.
json history(const reply& r) {
  json body = {{"model", "m"}, {"tools", k_tools}};
  json calls = json::array();
  for (const auto& c : r.calls)
    calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  json assistant = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}};
  if (!r.reasoning.empty()) assistant["reasoning_content"] = r.reasoning;
  body["messages"] = json::array({{{"role", "user"}, {"content", "Weather in Paris and Lyon for 2 days?"}}, assistant});
  auto req = parse_chat_request(body);
  REQUIRE(req);
  return req->messages;
}

}  // namespace

TEST_CASE("round trip: our tool calls rendered by each family's template parse back the same") {
  struct family {
    const char* file;
    tool_call_format format;
    bool mistral_ids;
    const char* end;  // the template's end of the assistant turn ("" : none)
  };
  const std::vector<family> families{
      {"openai-gpt-oss-120b.jinja", tool_call_format::harmony, false, ""},
      {"Qwen3-Coder.jinja", tool_call_format::qwen3_xml, false, "<|im_end|>"},
      {"Qwen-Qwen3-0.6B.jinja", tool_call_format::hermes, false, "<|im_end|>"},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", tool_call_format::hermes, false, "<|im_end|>"},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", tool_call_format::mistral, true, "</s>"},
      {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", tool_call_format::mistral, true, "</s>"},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", tool_call_format::mistral, true, "</s>"},
      {"deepseek-ai-DeepSeek-V3.1.jinja", tool_call_format::deepseek, false, "<｜end▁of▁sentence｜>"},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", tool_call_format::deepseek, false, "<｜end▁of▁sentence｜>"},
      {"GLM-4.6.jinja", tool_call_format::glm, false, ""},
      {"google-gemma-4-31B-it.jinja", tool_call_format::gemma4, false, "<turn|>"},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", tool_call_format::llama3_json, false, "<|e"},
      {"MiniMax-M2.jinja", tool_call_format::minimax, false, "[e~["},
      {"meetkai-functionary-medium-v3.2.jinja", tool_call_format::functionary_v3_2, false, "<|eot_id|>"},
      {"repo:meetkai-functionary-medium-v3.1.jinja", tool_call_format::functionary_v3_1, false, "<|eom_id|>"},
      // appended (#24, h24c)
      {"repo:ByteDance-Seed-OSS.jinja", tool_call_format::seed_oss, false, "<seed:eos>"},
      {"repo:LFM2.5-8B-A1B.jinja", tool_call_format::lfm2, false, "<|im_end|>"},
      {"repo:moonshotai-Kimi-K2.jinja", tool_call_format::kimi, false, "<|im_end|>"},
      {"repo:ibm-granite-granite-4.0.jinja", tool_call_format::hermes, false, "<|end_of_text|>"},
      {"repo:GLM-4.7-Flash.jinja", tool_call_format::glm, false, ""},
      {"repo:Qwen3.5-4B.jinja", tool_call_format::qwen3_xml, false, "<|im_end|>"},
  };
  // Not here: Kimi-K2's shared template (list.append, refused by HF's immutable sandbox, as
  // by ours: its tool-call history does not render in transformers either) and
  // llama.cpp's DeepSeek-R1 template (tojson of a generator: a TypeError in Python too),
  // Granite 3.3's (it renders only `content` of history messages, never tool_calls).
  for (const auto& f : families) {
    INFO(f.file);
    const std::string source = read_template(f.file);
    REQUIRE(tool_call_format_of_template(source) == f.format);
    auto t = text::jinja::chat_template::parse(source);
    REQUIRE(t);
    reply ours;
    const bool one_call = f.format == tool_call_format::llama3_json;  // Llama 3.1's template takes one
    for (const char* city : {"Paris", "Lyon"}) {
      if (one_call && ours.calls.size() == 1) break;
      const std::string id = f.mistral_ids ? syntax::new_mistral_call_id() : syntax::new_call_id();
      ours.calls.push_back({id, "get_weather", json{{"city", city}, {"days", 2}}.dump()});
    }
    if (f.format == tool_call_format::harmony) ours.reasoning = "Two cities: two calls.";
    json messages = history(ours);
    if (f.format == tool_call_format::harmony) messages = harmony_history(messages);  // as the server renders
    if (template_takes_text_arguments(f.format)) messages = text_arguments_history(messages);
    // What the template adds after the history before the reply (and its generation prompt).
    const std::string before = render(*t, json::array({messages[0]}), true);
    const std::string before_raw = render(*t, json::array({messages[0]}), false);
    const std::string whole = render(*t, messages, false);
    std::string rendered;
    if (whole.rfind(before, 0) == 0) rendered = whole.substr(before.size());
    else if (whole.rfind(before_raw, 0) == 0) rendered = whole.substr(before_raw.size());
    else FAIL("the history before the reply is not a prefix of the whole rendering");
    if (*f.end) rendered = rendered.substr(0, rendered.find(f.end));
    INFO("rendered reply: " << rendered);

    choice_text_settings s;
    s.tool_calls = f.format;
    s.tools = std::make_shared<tool_catalog>(tool_catalog::from_tools(k_tools));
    if (auto tags = reasoning_tags_of_template(source); tags && f.format != tool_call_format::harmony) {
      s.reasoning = true;
      s.tags = *tags;
    }
    choice_text text(s);
    auto d = text.push(rendered);
    d.append(text.flush());
    CHECK(d.warnings.empty());
    REQUIRE(d.calls.size() == ours.calls.size());
    for (std::size_t i = 0; i < d.calls.size(); ++i) {
      CHECK(d.calls[i].name == ours.calls[i].name);
      CHECK(json::parse(d.calls[i].arguments) == json::parse(ours.calls[i].arguments));
    }
    if (f.format == tool_call_format::harmony) CHECK(d.reasoning == ours.reasoning);
    // Ids the template writes back are ours where the format carries them.
    if (f.mistral_ids && f.format == tool_call_format::mistral && rendered.find("[CALL_ID]") != std::string::npos)
      CHECK(d.calls[0].id == ours.calls[0].id);
  }
}

// appended (#23, h23f): Qwen3.5's template as served: detection, the thinking switch its
// generation prompt carries, a reply that thinks then calls, and history arguments of every
// JSON type written the template's way (Python's str(): True, None) typed back by the schema.
TEST_CASE("Qwen3.5: the think switch in the prompt, a thinking reply's call, typed history arguments round trip") {
  const std::string source = read_template("repo:Qwen3.5-4B.jinja");
  REQUIRE(tool_call_format_of_template(source) == tool_call_format::qwen3_xml);
  CHECK(strict_form_of(tool_call_format::qwen3_xml, source) == strict_form::qwen3_xml);
  const auto tags = reasoning_tags_of_template(source);
  REQUIRE(tags);
  CHECK(tags->start == "<think>");
  CHECK(tags->end == "</think>");
  auto t = text::jinja::chat_template::parse(source);
  REQUIRE(t);
  const json user = json::array({{{"role", "user"}, {"content", "Weather in Paris for 2 days?"}}});
  text::jinja::chat_inputs in;
  in.messages = user;
  in.add_generation_prompt = true;
  auto on = t->render(text::jinja::build_context(in));
  in.kwargs["enable_thinking"] = false;
  auto off = t->render(text::jinja::build_context(in));
  REQUIRE(on);
  REQUIRE(off);
  CHECK(prompt_opens_reasoning(*on, *tags));
  CHECK_FALSE(prompt_opens_reasoning(*off, *tags));

  // What a Qwen3.5 model writes after the opened <think>: reasoning, then the call.
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "save", "parameters": {"type": "object",
    "properties": {"path": {"type": "string"}, "lines": {"type": "array"}, "opts": {"type": "object"},
    "sync": {"type": "boolean"}, "mode": {"type": ["integer", "null"]}, "n": {"type": "integer"},
    "note": {"type": "string"}}}}}])");
  choice_text_settings s;
  s.reasoning = true;
  s.starts_in_reasoning = true;
  s.tags = *tags;
  s.tool_calls = tool_call_format::qwen3_xml;
  s.tools = std::make_shared<tool_catalog>(tool_catalog::from_tools(tools));
  {
    choice_text text(s);
    auto d = text.push("Need to save it.\n</think>\n\n<tool_call>\n<function=save>\n<parameter=path>\nnotes.txt\n"
                       "</parameter>\n<parameter=n>\n2\n</parameter>\n</function>\n</tool_call>");
    d.append(text.flush());
    CHECK(d.reasoning == "Need to save it.\n");
    CHECK(d.content.find_first_not_of(" \n") == std::string::npos);
    REQUIRE(d.calls.size() == 1);
    CHECK(d.calls[0].name == "save");
    CHECK(json::parse(d.calls[0].arguments) == json{{"path", "notes.txt"}, {"n", 2}});
  }

  // A history call with every JSON type, rendered by the template and parsed back.
  const json args = {{"path", "a b.txt"}, {"lines", {"x", 1}}, {"opts", {{"k", true}}}, {"sync", true},
                     {"mode", nullptr}, {"n", 7}, {"note", "two\nlines"}};
  json body = {{"model", "m"}, {"tools", tools}, {"messages", json::array({user[0],
      {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({{{"id", "c1"}, {"type", "function"},
          {"function", {{"name", "save"}, {"arguments", args.dump()}}}}})}}})}};
  auto req = parse_chat_request(body);
  REQUIRE(req);
  in.messages = req->messages;
  in.tools = tools;
  in.add_generation_prompt = false;
  auto whole = t->render(text::jinja::build_context(in));
  REQUIRE(whole);
  const auto at = whole->rfind("<tool_call>");
  REQUIRE(at != std::string::npos);
  const std::string reply = whole->substr(at, whole->rfind("<|im_end|>") - at);
  CHECK(reply.find("<parameter=sync>\nTrue\n</parameter>") != std::string::npos);
  CHECK(reply.find("<parameter=mode>\nNone\n</parameter>") != std::string::npos);
  s.starts_in_reasoning = false;
  choice_text text(s);
  auto d = text.push(reply);
  d.append(text.flush());
  CHECK(d.warnings.empty());
  REQUIRE(d.calls.size() == 1);
  CHECK(json::parse(d.calls[0].arguments) == args);
}
