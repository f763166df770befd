// Completions (checklist 50-52) and LMI schema request parsing.
#include "catch.hpp"

#include "api/completion_request.hpp"
#include "api/errors.hpp"
#include "api/invocations.hpp"

using namespace vks;
using namespace vks::api;

namespace {
result<completion_request> parse(const std::string& body, parse_limits lim = {}) {
  auto j = parse_json_body(body);
  if (!j) return fail(j.error());
  return parse_completion_request(*j, lim);
}
result<lmi_request> parse_lmi(const std::string& body) {
  auto j = parse_json_body(body);
  if (!j) return fail(j.error());
  return parse_lmi_request(*j);
}
}  // namespace

TEST_CASE("checklist 50: every prompt form") {
  auto s = parse(R"({"prompt":"hello"})");
  REQUIRE(s.ok());
  REQUIRE(s->prompts.size() == 1);
  CHECK(!s->prompts[0].is_tokens);
  CHECK(s->prompts[0].text == "hello");
  CHECK(s->sampling.max_tokens == 16);
  auto list = parse(R"({"prompt":["a","b","c"],"n":2,"temperature":1})");
  REQUIRE(list.ok());
  CHECK(list->prompts.size() == 3);
  auto ids = parse(R"({"prompt":[1,2,3]})");
  REQUIRE(ids.ok());
  REQUIRE(ids->prompts.size() == 1);
  CHECK(ids->prompts[0].is_tokens);
  CHECK(ids->prompts[0].tokens == std::vector<std::int32_t>{1, 2, 3});
  auto lists = parse(R"({"prompt":[[1,2],[3]]})");
  REQUIRE(lists.ok());
  REQUIRE(lists->prompts.size() == 2);
  CHECK(lists->prompts[1].tokens == std::vector<std::int32_t>{3});
}

TEST_CASE("invalid completions requests are 400 naming the parameter") {
  auto bad = [](const std::string& body, const std::string& param, parse_limits lim = {}) {
    INFO(body);
    auto r = parse(body, lim);
    REQUIRE(!r.ok());
    CHECK(http_status(r.error().code) == 400);
    CHECK(r.error().param == param);
  };
  bad(R"({})", "prompt");
  bad(R"({"prompt":""})", "prompt");
  bad(R"({"prompt":[]})", "prompt");
  bad(R"({"prompt":[1,-2]})", "prompt");
  bad(R"({"prompt":[[1],[]]})", "prompt");
  bad(R"({"prompt":[1.5]})", "prompt");
  bad(R"({"prompt":{"a":1}})", "prompt");
  bad(R"({"prompt":[5]})", "prompt", parse_limits{128, 20, 5, 64});
  bad(R"({"prompt":"x","max_tokens":0})", "max_tokens");
  bad(R"({"prompt":"x","logprobs":21})", "logprobs");
  bad(R"({"prompt":"x","logprobs":true})", "logprobs");
  bad(R"({"prompt":"x","suffix":"y"})", "suffix");
  bad(R"({"prompt":"x","stream_options":{}})", "stream_options");
  bad(R"({"prompt":"x","stream":true,"prompt_logprobs":0})", "prompt_logprobs");
  bad(R"({"prompt":"x","best_of":3})", "best_of");
  bad(R"({"prompt":"x","temperature":3})", "temperature");
}

TEST_CASE("completions options") {
  auto r = parse(R"({"prompt":"x","echo":true,"max_tokens":0,"logprobs":2,"stop":["a","b"],"stream":true,
                     "stream_options":{"include_usage":true}})");
  REQUIRE(r.ok());
  CHECK(r->echo);
  CHECK(r->sampling.max_tokens == 0);
  CHECK(r->logprobs == 2);
  CHECK(r->sampling.logprobs == 2);
  CHECK(r->sampling.stop.size() == 2);
  CHECK(r->stream.include_usage);
}

TEST_CASE("completions: truncate_prompt_tokens, return_token_ids and the sampling extras") {
  parse_limits lim;
  lim.max_model_len = 32;
  auto r = parse(R"({"prompt":[1,2,3],"truncate_prompt_tokens":2,"return_token_ids":true,"allowed_token_ids":[5],)"
                 R"("bad_words":["x"]})", lim);
  REQUIRE(r.ok());
  CHECK(r->truncate_prompt_tokens == 2);
  CHECK(r->return_token_ids);
  CHECK(r->sampling.allowed_token_ids == std::vector<std::int32_t>{5});
  CHECK(r->sampling.bad_words == std::vector<std::string>{"x"});
  auto bad = parse(R"({"prompt":"a","truncate_prompt_tokens":33})", lim);
  REQUIRE(!bad.ok());
  CHECK(bad.error().param == "truncate_prompt_tokens");
}

TEST_CASE("LMI schema: mapping and defaults") {
  auto d = parse_lmi(R"({"inputs":"Hello"})");
  REQUIRE(d.ok());
  CHECK(d->completion.prompts[0].text == "Hello");
  CHECK(d->completion.sampling.max_tokens == 30);
  CHECK(!d->details);
  auto r = parse_lmi(R"({"inputs":"Hi","stream":true,"parameters":{"max_new_tokens":5,"do_sample":false,
     "stop_sequences":["\n"],"ignore_eos_token":true,"details":true,"return_full_text":true,"top_k":5,
     "repetition_penalty":1.2,"seed":3,"unknown_knob":1}})");
  REQUIRE(r.ok());
  const auto& c = r->completion;
  CHECK(c.sampling.max_tokens == 5);
  CHECK(c.sampling.temperature == 0.0f);
  CHECK(c.sampling.stop == std::vector<std::string>{"\n"});
  CHECK(c.sampling.ignore_eos);
  CHECK(r->details);
  CHECK(r->return_full_text);
  CHECK(c.echo);
  CHECK(c.stream.stream);
  CHECK(c.sampling.top_k == 5);
  CHECK(c.sampling.seed == 3u);
  auto bad = parse_lmi(R"({"inputs":"x","parameters":{"max_new_tokens":0}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().param == "parameters.max_new_tokens");
  auto bad2 = parse_lmi(R"({"inputs":5})");
  REQUIRE(!bad2.ok());
  CHECK(bad2.error().param == "inputs");
  auto bad3 = parse_lmi(R"({"inputs":"x","parameters":[]})");
  REQUIRE(!bad3.ok());
  auto bad4 = parse_lmi(R"({"inputs":"x","parameters":{"temperature":9}})");
  REQUIRE(!bad4.ok());
  CHECK(bad4.error().param == "parameters.temperature");
}

TEST_CASE("LMI schema: the vLLM fields DJL passes through") {
  auto j = parse_json_body(R"({"inputs":"Hi","parameters":{"max_new_tokens":5,"max_tokens":9,"truncate":4,)"
                           R"("details":true,"decoder_input_details":true,"allowed_token_ids":[1,2],"bad_words":["no"],)"
                           R"("guided_regex":"[ab]+"}})");
  REQUIRE(j.ok());
  parse_limits lim;
  lim.max_model_len = 16;
  auto r = parse_lmi_request(*j, lim);
  REQUIRE(r.ok());
  const auto& c = r->completion;
  CHECK(c.sampling.max_tokens == 9);  // max_tokens wins, as DJL's dict update does
  CHECK(c.truncate_prompt_tokens == 4);
  CHECK(r->prefill);
  CHECK(c.sampling.prompt_logprobs == 0);
  CHECK(c.sampling.allowed_token_ids == std::vector<std::int32_t>{1, 2});
  CHECK(c.sampling.bad_words == std::vector<std::string>{"no"});
  REQUIRE(c.structured);
  CHECK(c.structured->k == structured_output::kind::regex);

  auto all = parse_lmi(R"({"inputs":"Hi","parameters":{"truncate_prompt_tokens":-1,"decoder_input_details":true}})");
  REQUIRE(all.ok());
  CHECK(all->completion.truncate_prompt_tokens > 0);
  CHECK(!all->prefill);  // decoder_input_details needs details
  CHECK(all->completion.sampling.prompt_logprobs < 0);
  auto streamed = parse_lmi(R"({"inputs":"Hi","stream":true,"parameters":{"details":true,"decoder_input_details":true}})");
  REQUIRE(streamed.ok());
  CHECK(!streamed->prefill);  // the stream's last line has no prefill

  struct bad_case {
    const char* body;
    const char* param;
  };
  for (const auto& b : {bad_case{R"({"inputs":"x","parameters":{"truncate":0}})", "parameters.truncate"},
                        bad_case{R"({"inputs":"x","parameters":{"max_tokens":0}})", "parameters.max_tokens"},
                        bad_case{R"({"inputs":"x","parameters":{"guided_regex":3}})", "parameters.guided_regex"},
                        bad_case{R"({"inputs":"x","parameters":{"structured_outputs":{"grammar":1}}})",
                                 "parameters.structured_outputs.grammar"},
                        bad_case{R"({"inputs":"x","parameters":{"structured_outputs":{"json":{},"disable_any_whitespace":1}}})",
                                 "parameters.structured_outputs.disable_any_whitespace"},
                        bad_case{R"({"inputs":"x","parameters":{"response_format":{"type":"structural_tag","triggers":[""],"structures":[]}}})",
                                 "parameters.response_format.triggers[0]"},
                        bad_case{R"({"inputs":"x","parameters":{"guided_regex":"a","guided_choice":["a"]}})",
                                 "parameters.structured_outputs"}}) {
    INFO(b.body);
    auto e = parse_lmi(b.body);
    REQUIRE(!e.ok());
    CHECK(http_status(e.error().code) == 400);
    CHECK(e.error().param == b.param);
  }
}

TEST_CASE("checklist 51: echo with logprobs asks the engine to score the prompt") {
  auto r = parse(R"({"prompt":"hello","echo":true,"logprobs":2,"max_tokens":3})");
  REQUIRE(r.ok());
  CHECK(r->sampling.prompt_logprobs == 2);
  CHECK(r->echo_scores_prompt);
  auto streamed = parse(R"({"prompt":"hello","echo":true,"logprobs":0,"stream":true})");
  REQUIRE(streamed.ok());  // implied, so allowed with stream (unlike an explicit prompt_logprobs)
  CHECK(streamed->sampling.prompt_logprobs == 0);
  auto plain = parse(R"({"prompt":"hello","logprobs":2})");
  REQUIRE(plain.ok());
  CHECK(plain->sampling.prompt_logprobs == -1);
  auto explicit_ = parse(R"({"prompt":"hello","echo":true,"logprobs":1,"prompt_logprobs":3})");
  REQUIRE(explicit_.ok());
  CHECK(explicit_->sampling.prompt_logprobs == 3);
  CHECK_FALSE(explicit_->echo_scores_prompt);
}

TEST_CASE("cache_salt on completions and in the LMI parameters") {
  auto r = parse(R"({"prompt":"hi","cache_salt":"s1"})");
  REQUIRE(r.ok());
  CHECK(r->cache_salt == "s1");
  auto bad = parse(R"({"prompt":"hi","cache_salt":""})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().param == "cache_salt");
  auto l = parse_lmi(R"({"inputs":"hi","parameters":{"cache_salt":"s2"}})");
  REQUIRE(l.ok());
  CHECK(l->completion.cache_salt == "s2");
  auto lbad = parse_lmi(R"({"inputs":"hi","parameters":{"cache_salt":[1]}})");
  REQUIRE(!lbad.ok());
  CHECK(lbad.error().param == "parameters.cache_salt");
}

TEST_CASE("prompts x n above --max-sequences-per-request is a 400 naming the limit") {
  parse_limits lim;
  lim.max_seqs_per_request = 6;
  CHECK(parse(R"({"prompt":["a","b","c"],"n":2,"temperature":1})", lim).ok());  // 6
  auto over = parse(R"({"prompt":["a","b","c","d"],"n":2,"temperature":1})", lim);  // 8
  REQUIRE(!over.ok());
  CHECK(http_status(over.error().code) == 400);
  CHECK(over.error().param == "n");
  CHECK(over.error().message.find("8 sequences") != std::string::npos);
  CHECK(over.error().message.find("--max-sequences-per-request") != std::string::npos);
  // Too many prompts alone is refused before they are read.
  auto many = parse(R"({"prompt":["a","b","c","d","e","f","g"]})", lim);
  REQUIRE(!many.ok());
  CHECK(many.error().param == "prompt");
  // The default (256): 1,000 prompts are refused.
  std::string body = R"({"prompt":[)";
  for (int i = 0; i < 1000; ++i) body += std::string(i ? "," : "") + "\"p\"";
  body += "]}";
  auto big = parse(body);
  REQUIRE(!big.ok());
  CHECK(http_status(big.error().code) == 400);
}
