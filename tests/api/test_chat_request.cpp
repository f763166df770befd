// Chat request validation (checklist 29-31, 45-49) and message normalisation.
#include "catch.hpp"

#include "api/chat_request.hpp"
#include "api/errors.hpp"
#include "api/invocations.hpp"

using namespace vks;
using namespace vks::api;

namespace {

result<chat_request> parse(const std::string& body) {
  auto j = parse_json_body(body);
  if (!j) return fail(j.error());
  return parse_chat_request(*j);
}

std::string with(const std::string& extra) {
  return R"({"model":"m","messages":[{"role":"user","content":"hi"}])" + (extra.empty() ? "" : "," + extra) + "}";
}

// Expects a 400 naming `param`.
void rejects(const std::string& extra, const std::string& param) {
  INFO(extra);
  auto r = parse(with(extra));
  REQUIRE(!r.ok());
  CHECK(http_status(r.error().code) == 400);
  CHECK(r.error().param == param);
  CHECK(!r.error().message.empty());
}

}  // namespace

TEST_CASE("a minimal chat request parses with defaults") {
  auto r = parse(with(""));
  REQUIRE(r.ok());
  CHECK(r->model == "m");
  CHECK(r->messages.size() == 1);
  CHECK(r->sampling.max_tokens == -1);
  CHECK(r->sampling.temperature == 1.0f);
  CHECK(r->sampling.n == 1);
  CHECK(r->add_generation_prompt);
  CHECK(!r->stream.stream);
  CHECK(r->sampling.logprobs == -1);
  auto no_model = parse(R"({"messages":[{"role":"user","content":"hi"}]})");
  REQUIRE(no_model.ok());
  CHECK(no_model->model.empty());
}

TEST_CASE("checklist 29: invalid chat requests are 400 naming the parameter") {
  auto missing = parse(R"({"model":"m"})");
  REQUIRE(!missing.ok());
  CHECK(missing.error().param == "messages");
  auto empty = parse(R"({"model":"m","messages":[]})");
  REQUIRE(!empty.ok());
  CHECK(empty.error().param == "messages");
  rejects(R"("n":0)", "n");
  rejects(R"("n":-1)", "n");
  rejects(R"("n":129)", "n");
  rejects(R"("temperature":2.5)", "temperature");
  rejects(R"("temperature":-0.1)", "temperature");
  rejects(R"("top_p":0)", "top_p");
  rejects(R"("top_p":1.5)", "top_p");
  rejects(R"("presence_penalty":2.5)", "presence_penalty");
  rejects(R"("frequency_penalty":-2.01)", "frequency_penalty");
  rejects(R"("logprobs":true,"top_logprobs":21)", "top_logprobs");
  rejects(R"("top_logprobs":2)", "top_logprobs");
  rejects(R"("stream_options":{"include_usage":true})", "stream_options");
  rejects(R"("stream":false,"stream_options":{"include_usage":true})", "stream_options");
  rejects(R"("tools":[])", "tools");
  rejects(R"("tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}})",
          "tool_choice");
  rejects(R"("tool_choice":"required")", "tool_choice");
  rejects(R"("continue_final_message":true,"add_generation_prompt":true)", "continue_final_message");
}

TEST_CASE("continue_final_message alone turns the generation prompt off") {
  auto r = parse(with(R"("continue_final_message":true)"));
  REQUIRE(r.ok());
  CHECK(r->continue_final_message);
  CHECK_FALSE(r->add_generation_prompt);
  auto both_off = parse(with(R"("continue_final_message":true,"add_generation_prompt":false)"));
  REQUIRE(both_off.ok());
  CHECK_FALSE(both_off->add_generation_prompt);
  auto plain = parse(with(R"("add_generation_prompt":true)"));
  REQUIRE(plain.ok());
  CHECK(plain->add_generation_prompt);
  CHECK_FALSE(plain->continue_final_message);
}

TEST_CASE("wrong types and other ranges are 400") {
  rejects(R"("temperature":"hot")", "temperature");
  rejects(R"("n":1.5)", "n");
  rejects(R"("n":true)", "n");
  rejects(R"("max_tokens":0)", "max_tokens");
  rejects(R"("max_tokens":"10")", "max_tokens");
  rejects(R"("max_completion_tokens":-5)", "max_completion_tokens");
  rejects(R"("stream":"yes")", "stream");
  rejects(R"("stop":[""])", "stop");
  rejects(R"("stop":5)", "stop");
  rejects(R"("stop":["a",3])", "stop");
  rejects(R"("top_k":-2)", "top_k");
  rejects(R"("min_p":1.5)", "min_p");
  rejects(R"("repetition_penalty":0)", "repetition_penalty");
  rejects(R"("logit_bias":{"abc":1})", "logit_bias");
  rejects(R"("logit_bias":{"5":101})", "logit_bias");
  rejects(R"("logit_bias":[1])", "logit_bias");
  rejects(R"("stop_token_ids":[-1])", "stop_token_ids");
  rejects(R"("min_tokens":-1)", "min_tokens");
  rejects(R"("max_tokens":5,"min_tokens":6)", "min_tokens");
  rejects(R"("seed":"x")", "seed");
  rejects(R"("chat_template_kwargs":[])", "chat_template_kwargs");
  rejects(R"("response_format":{"type":"json_schema"})", "response_format");
  rejects(R"("guided_regex":"a+","guided_choice":["a"])", "structured_outputs");
  rejects(R"("reasoning_effort":"extreme")", "reasoning_effort");
}

TEST_CASE("n > 1 with greedy sampling is rejected like vLLM") {
  rejects(R"("n":2,"temperature":0)", "n");
  auto r = parse(with(R"("n":2,"temperature":0.7)"));
  REQUIRE(r.ok());
  CHECK(r->sampling.n == 2);
}

TEST_CASE("checklist 47: prompt_logprobs with stream is 400") {
  rejects(R"("stream":true,"prompt_logprobs":1)", "prompt_logprobs");
  auto r = parse(with(R"("prompt_logprobs":2)"));
  REQUIRE(r.ok());
  CHECK(r->sampling.prompt_logprobs == 2);
}

TEST_CASE("checklist 30: unknown fields are ignored; nulls count as absent") {
  auto r = parse(with(R"("frobnicate":{"x":[1,2]},"store":true,"metadata":{"a":"b"},"temperature":null,"user":"u")"));
  REQUIRE(r.ok());
  CHECK(r->sampling.temperature == 1.0f);
}

TEST_CASE("checklist 31: max_completion_tokens wins over max_tokens") {
  auto r = parse(with(R"("max_tokens":50,"max_completion_tokens":7)"));
  REQUIRE(r.ok());
  CHECK(r->sampling.max_tokens == 7);
  auto r2 = parse(with(R"("max_tokens":50)"));
  REQUIRE(r2.ok());
  CHECK(r2->sampling.max_tokens == 50);
}

TEST_CASE("checklist 46: vLLM sampling extras are read") {
  auto r = parse(with(R"("top_k":40,"min_p":0.05,"repetition_penalty":1.1,"ignore_eos":true,"min_tokens":3,
    "skip_special_tokens":false,"include_stop_str_in_output":true,"stop_token_ids":[2,7],"seed":-1,
    "stop":"END","logit_bias":{"15":-100,"7":2.5},"presence_penalty":0.5,"frequency_penalty":-0.5,
    "logprobs":true,"top_logprobs":3,"echo":true,"add_generation_prompt":false,"continue_final_message":true,
    "chat_template":"{{ x }}","chat_template_kwargs":{"enable_thinking":false},"temperature":0.3,"top_p":0.9)"));
  REQUIRE(r.ok());
  const auto& s = r->sampling;
  CHECK(s.top_k == 40);
  CHECK(s.min_p == Approx(0.05f));
  CHECK(s.repetition_penalty == Approx(1.1f));
  CHECK(s.ignore_eos);
  CHECK(s.min_tokens == 3);
  CHECK(!s.skip_special_tokens);
  CHECK(s.include_stop_str_in_output);
  CHECK(s.stop_token_ids == std::vector<std::int32_t>{2, 7});
  CHECK(s.seed == std::uint64_t(-1));
  CHECK(s.stop == std::vector<std::string>{"END"});
  REQUIRE(s.logit_bias.size() == 2);
  CHECK(s.logit_bias[0].first == 15);
  CHECK(s.logit_bias[0].second == -100.0f);
  CHECK(s.logprobs == 3);
  CHECK(r->echo);
  CHECK(r->continue_final_message);
  CHECK(*r->chat_template == "{{ x }}");
  CHECK(r->chat_template_kwargs["enable_thinking"] == false);
  CHECK(s.temperature == Approx(0.3f));
  CHECK(s.top_p == Approx(0.9f));
  auto off = parse(with(R"("top_k":-1)"));
  REQUIRE(off.ok());
  CHECK(off->sampling.top_k == 0);
}

TEST_CASE("vLLM extras: allowed_token_ids, bad_words, truncate_prompt_tokens, return_token_ids") {
  auto j = parse_json_body(with(R"("allowed_token_ids":[3,1,4],"bad_words":["  bad","worse words"],)"
                                R"("truncate_prompt_tokens":7,"return_token_ids":true)"));
  REQUIRE(j.ok());
  parse_limits lim;
  lim.n_vocab = 10;
  lim.max_model_len = 64;
  auto r = parse_chat_request(*j, lim);
  REQUIRE(r.ok());
  CHECK(r->sampling.allowed_token_ids == std::vector<std::int32_t>{3, 1, 4});
  CHECK(r->sampling.bad_words == std::vector<std::string>{"  bad", "worse words"});
  CHECK(r->truncate_prompt_tokens == 7);
  CHECK(r->return_token_ids);
  auto all = parse_json_body(with(R"("truncate_prompt_tokens":-1,"bad_words":"one")"));
  REQUIRE(all.ok());
  auto r2 = parse_chat_request(*all, lim);
  REQUIRE(r2.ok());
  CHECK(r2->truncate_prompt_tokens == 64);  // -1: the model's context length
  CHECK(r2->sampling.bad_words == std::vector<std::string>{"one"});
  auto plain = parse(with(""));
  REQUIRE(plain.ok());
  CHECK(plain->truncate_prompt_tokens == 0);
  CHECK(!plain->return_token_ids);
  CHECK(plain->sampling.allowed_token_ids.empty());

  rejects(R"("allowed_token_ids":[])", "allowed_token_ids");
  rejects(R"("allowed_token_ids":[-1])", "allowed_token_ids");
  rejects(R"("allowed_token_ids":"1")", "allowed_token_ids");
  rejects(R"("bad_words":[""])", "bad_words");
  rejects(R"("bad_words":[" \t"])", "bad_words");
  rejects(R"("bad_words":[1])", "bad_words");
  rejects(R"("truncate_prompt_tokens":0)", "truncate_prompt_tokens");
  rejects(R"("truncate_prompt_tokens":-2)", "truncate_prompt_tokens");
  rejects(R"("truncate_prompt_tokens":1.5)", "truncate_prompt_tokens");
  rejects(R"("return_token_ids":"yes")", "return_token_ids");
  // Bounds that need the model: vocabulary and context length.
  for (const char* extra : {R"("allowed_token_ids":[10])", R"("truncate_prompt_tokens":65)"}) {
    auto b = parse_json_body(with(extra));
    REQUIRE(b.ok());
    auto e = parse_chat_request(*b, lim);
    REQUIRE(!e.ok());
    CHECK(http_status(e.error().code) == 400);
  }
  auto big = parse_json_body(with(R"("truncate_prompt_tokens":65)"));
  auto e = parse_chat_request(*big, lim);
  CHECK(e.error().message.find("greater than max_model_len (64)") != std::string::npos);
}

TEST_CASE("stream options") {
  auto r = parse(with(R"("stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true})"));
  REQUIRE(r.ok());
  CHECK(r->stream.stream);
  CHECK(r->stream.include_usage);
  CHECK(r->stream.continuous_usage_stats);
  rejects(R"("stream":true,"stream_options":{"include_usage":1})", "stream_options.include_usage");
}

TEST_CASE("checklist 49: text parts are joined; media parts are rejected") {
  auto r = parse(R"({"messages":[{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
                                 {"role":"user","content":"q"}]})");
  REQUIRE(r.ok());
  CHECK(r->messages[0]["content"] == "a\nb");
  auto single = parse(R"({"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}]})");
  REQUIRE(single.ok());
  CHECK(single->messages[0]["content"] == "hello");
  auto img = parse(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})");
  REQUIRE(!img.ok());
  CHECK(http_status(img.error().code) == 400);
  CHECK(img.error().param == "messages[0].content[0]");
  auto bad_role = parse(R"({"messages":[{"role":"wizard","content":"x"}]})");
  REQUIRE(!bad_role.ok());
  CHECK(bad_role.error().param == "messages[0].role");
  auto no_content = parse(R"({"messages":[{"role":"user"}]})");
  REQUIRE(!no_content.ok());
  auto num_content = parse(R"({"messages":[{"role":"user","content":5}]})");
  REQUIRE(!num_content.ok());
  CHECK(num_content.error().param == "messages[0].content");
}

TEST_CASE("checklist 45: assistant history with reasoning / tool calls is normalised") {
  auto r = parse(R"({"messages":[{"role":"user","content":"q"},
    {"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[{"id":"c1","type":"function",
      "function":{"name":"f","arguments":"{\"x\":1}"}}]},
    {"role":"tool","content":"42","tool_call_id":"c1"},
    {"role":"assistant","content":"a","reasoning":"r2"}]})");
  REQUIRE(r.ok());
  const auto& m = r->messages;
  CHECK(m[1]["content"] == "");  // vLLM: null content renders as ""
  CHECK(m[1]["reasoning_content"] == "think");
  CHECK(m[1]["reasoning"] == "think");
  CHECK(m[1]["tool_calls"][0]["function"]["arguments"]["x"] == 1);
  CHECK(m[2]["tool_call_id"] == "c1");
  CHECK(m[3]["reasoning_content"] == "r2");
}

TEST_CASE("tools, tool_choice and structured outputs") {
  auto r = parse(with(R"("tools":[{"type":"function","function":{"name":"get","parameters":{}},"strict":true}],
                          "tool_choice":{"type":"function","function":{"name":"get"}})"));
  REQUIRE(r.ok());
  CHECK(r->tool_choice == tool_choice_mode::named);
  CHECK(r->tool_choice_name == "get");
  auto a = parse(with(R"("tools":[{"type":"function","function":{"name":"get"}}])"));
  REQUIRE(a.ok());
  CHECK(a->tool_choice == tool_choice_mode::automatic);
  auto g = parse(with(R"("guided_json":{"type":"object"})"));
  REQUIRE(g.ok());
  REQUIRE(g->structured);
  CHECK(g->structured->k == structured_output::kind::json_schema);
  auto rf = parse(with(R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"array"}}})"));
  REQUIRE(rf.ok());
  CHECK(rf->structured->value["type"] == "array");
  auto txt = parse(with(R"("response_format":{"type":"text"})"));
  REQUIRE(txt.ok());
  CHECK(!txt->structured);
  auto effort = parse(with(R"("reasoning_effort":"none")"));
  REQUIRE(effort.ok());
  CHECK(effort->chat_template_kwargs["enable_thinking"] == false);
}

TEST_CASE("cache_salt: a non-empty string, kept for the engine") {
  auto r = parse(with(R"("cache_salt":"tenant-7")"));
  REQUIRE(r.ok());
  CHECK(r->cache_salt == "tenant-7");
  auto none = parse(with(""));
  REQUIRE(none.ok());
  CHECK(none->cache_salt.empty());
  auto null = parse(with(R"("cache_salt":null)"));
  REQUIRE(null.ok());
  CHECK(null->cache_salt.empty());
  rejects(R"("cache_salt":"")", "cache_salt");
  rejects(R"("cache_salt":42)", "cache_salt");
  rejects(R"("cache_salt":")" + std::string(k_max_cache_salt + 1, 'x') + "\"", "cache_salt");
}

TEST_CASE("n above --max-sequences-per-request is a 400 naming the limit") {
  auto j = parse_json_body(with(R"("n":8,"temperature":1)"));
  REQUIRE(j.ok());
  parse_limits lim;
  lim.max_seqs_per_request = 4;
  auto r = parse_chat_request(*j, lim);
  REQUIRE(!r.ok());
  CHECK(http_status(r.error().code) == 400);
  CHECK(r.error().param == "n");
  CHECK(r.error().message.find("--max-sequences-per-request") != std::string::npos);
  lim.max_seqs_per_request = 8;
  CHECK(parse_chat_request(*j, lim).ok());
}
