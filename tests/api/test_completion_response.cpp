// text_completion responses and streams (seed 000 shapes), echo and logprobs arrays,
// multiple prompts x n, LMI outputs.
#include "catch.hpp"

#include "api/completion_response.hpp"
#include "api/lmi_response.hpp"

using namespace vks;
using namespace vks::api;
using engine::finish_reason;

namespace {

engine::token_event tok(int seq, std::string text, int n, std::vector<engine::position_logprobs> lps = {}) {
  engine::token_event t;
  t.seq = seq;
  t.tokens.assign(1, 3);
  if (!lps.empty()) {
    t.tokens.clear();
    for (const auto& x : lps) t.tokens.push_back(x.token.id);
  }
  t.text = std::move(text);
  t.logprobs = std::move(lps);
  t.n_completion_tokens = n;
  return t;
}

engine::finished_event fin(int seq, std::string text, finish_reason r, engine::stop_reason s, int n_prompt, int n) {
  engine::finished_event f;
  f.seq = seq;
  f.reason = r;
  f.stop = std::move(s);
  f.text = std::move(text);
  f.seq_usage = {n_prompt, n, 0};
  return f;
}

engine::position_logprobs lp(engine::token_id id, const char* text, float logprob, std::vector<engine::token_logprob> top = {}) {
  engine::position_logprobs p;
  p.token = {id, logprob, 1, text};
  p.top = std::move(top);
  return p;
}

}  // namespace

TEST_CASE("non-streaming text_completion matches seed 000 (two prompts)") {
  completion_output_settings s;
  s.n_prompts = 2;
  completion_accumulator acc(s);
  acc.on_event(1, tok(0, "Best practices", 1));
  acc.on_event(0, tok(0, "To maintain", 1));
  acc.on_event(0, fin(0, " good", finish_reason::stop, {}, 10, 20));
  acc.on_event(1, fin(0, "", finish_reason::stop, {}, 10, 30));
  REQUIRE(acc.done());
  CHECK(dump_json(acc.build({"cmpl-86c6f7fe2ead4dc79ba5942eecfb9930", 1743489812, "/opt/ml/model"})) ==
        R"({"id":"cmpl-86c6f7fe2ead4dc79ba5942eecfb9930","object":"text_completion","created":1743489812,"model":"/opt/ml/model",)"
        R"("choices":[{"index":0,"text":"To maintain good","logprobs":null,"finish_reason":"stop","stop_reason":null,"prompt_logprobs":null},)"
        R"({"index":1,"text":"Best practices","logprobs":null,"finish_reason":"stop","stop_reason":null,"prompt_logprobs":null}],)"
        R"("service_tier":null,"system_fingerprint":null,)"
        R"("usage":{"prompt_tokens":20,"completion_tokens":50,"total_tokens":70,"prompt_tokens_details":null},"kv_transfer_params":null})");
}

TEST_CASE("choices flatten as prompt_idx * n + i") {
  completion_output_settings s;
  s.n_prompts = 2;
  s.n = 2;
  completion_accumulator acc(s);
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 2; ++q) acc.on_event(p, fin(q, std::to_string(p) + "/" + std::to_string(q), finish_reason::length, {}, 3, 1));
  REQUIRE(acc.done());
  json j = acc.build({"c", 1, "m"});
  CHECK(j["choices"][2]["text"] == "1/0");
  CHECK(j["choices"][2]["index"] == 2);
  CHECK(j["choices"][3]["text"] == "1/1");
  CHECK(j["usage"]["prompt_tokens"] == 6);
  CHECK(j["usage"]["completion_tokens"] == 4);
}

TEST_CASE("checklist 51-52: echo with logprobs; parallel arrays and offsets") {
  completion_output_settings s;
  s.echo = true;
  s.prompt_texts = {"Hi there"};
  s.logprobs = 1;
  completion_accumulator acc(s);
  engine::prompt_logprobs_event p;
  p.first_token = {1, 0.0f, 0, "Hi"};
  p.positions = {std::nullopt, lp(2, " there", -2.0f, {{9, -1.0f, 1, " you"}})};
  acc.on_event(0, p);
  acc.on_event(0, tok(0, " é", 1, {lp(3, " é", -0.25f, {{3, -0.25f, 1, " é"}})}));
  acc.on_event(0, fin(0, "!", finish_reason::stop, {}, 2, 2));
  json j = acc.build({"c", 1, "m"});
  const json& c = j["choices"][0];
  CHECK(c["text"] == "Hi there é!");
  CHECK(dump_json(c["logprobs"]) ==
        R"({"text_offset":[0,2,8],"token_logprobs":[null,-2.0,-0.25],"tokens":["Hi"," there"," é"],)"
        R"("top_logprobs":[null,{" you":-1.0," there":-2.0},{" é":-0.25}]})");
}

TEST_CASE("streamed text_completion chunks match seed 000") {
  completion_stream st({"cmpl-1318a788635e47a58bafeaf18a2816c2", 1743433786, "/opt/ml/model"}, completion_stream_settings{});
  std::vector<std::string> got;
  int n = 0;
  for (const char* t : {"If", " you", " have"})
    for (auto& c : st.on_event(0, tok(0, t, ++n))) got.push_back(c);
  for (auto& c : st.on_event(0, fin(0, " a", finish_reason::stop, {}, 5, ++n))) got.push_back(c);
  CHECK(st.done());
  CHECK(st.finish().empty());
  auto line = [](const char* text, const char* finish) {
    return std::string(R"({"id":"cmpl-1318a788635e47a58bafeaf18a2816c2","object":"text_completion","created":1743433786,"model":"/opt/ml/model","choices":[{"index":0,"text":")") +
           text + R"(","logprobs":null,"finish_reason":)" + finish + R"(,"stop_reason":null}],"usage":null})";
  };
  std::vector<std::string> want{line("If", "null"), line(" you", "null"), line(" have", "null"), line(" a", "\"stop\"")};
  CHECK(got == want);
}

TEST_CASE("streamed completions: echo in the first chunk, usage chunk, logprobs per chunk") {
  completion_stream_settings s;
  s.output.echo = true;
  s.output.prompt_texts = {"P:"};
  s.output.logprobs = 0;
  s.include_usage = true;
  completion_stream st({"c", 1, "m"}, s);
  auto a = st.on_event(0, tok(0, "x", 1, {lp(4, "x", -1.0f)}));
  REQUIRE(a.size() == 1);
  auto ja = json::parse(a[0]);
  CHECK(ja["choices"][0]["text"] == "P:x");
  CHECK(ja["choices"][0]["logprobs"]["text_offset"] == json::parse("[2]"));
  auto b = st.on_event(0, tok(0, "y", 2, {lp(5, "y", -2.0f)}));
  auto jb = json::parse(b[0]);
  CHECK(jb["choices"][0]["text"] == "y");
  CHECK(jb["choices"][0]["logprobs"]["tokens"] == json::parse(R"(["y"])"));
  CHECK(jb["choices"][0]["logprobs"]["text_offset"] == json::parse("[3]"));
  st.on_event(0, fin(0, "", finish_reason::length, {}, 2, 2));
  auto u = st.finish();
  REQUIRE(u.size() == 1);
  CHECK(u[0] == R"({"id":"c","object":"text_completion","created":1,"model":"m","choices":[],)"
                 R"("usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4,"prompt_tokens_details":null}})");
}

TEST_CASE("return_token_ids: per-choice prompt_token_ids and token_ids, whole and streamed") {
  completion_output_settings o;
  o.n_prompts = 2;
  o.echo = true;
  o.prompt_texts = {"P", "Q"};
  o.return_token_ids = true;
  o.prompt_token_ids = {{1, 2}, {7}};
  completion_accumulator acc(o);
  auto t = tok(0, "x", 1);
  t.tokens = {4, 5};
  acc.on_event(0, t);
  auto f = fin(0, "y", finish_reason::stop, {}, 2, 3);
  f.tokens = {6};
  acc.on_event(0, f);
  acc.on_event(1, fin(0, "", finish_reason::length, {}, 1, 0));
  json j = acc.build({"c", 1, "m"});
  CHECK(j["choices"][0]["text"] == "Pxy");
  CHECK(j["choices"][0]["prompt_token_ids"] == json::parse("[1,2]"));
  CHECK(j["choices"][0]["token_ids"] == json::parse("[4,5,6]"));  // generated only, echo or not
  CHECK(j["choices"][1]["prompt_token_ids"] == json::parse("[7]"));
  CHECK(j["choices"][1]["token_ids"] == json::array());
  CHECK(dump_json(j["choices"][0]).find(R"("prompt_logprobs":null,"prompt_token_ids":[1,2],"token_ids":[4,5,6]})") !=
        std::string::npos);

  completion_stream_settings ss;
  ss.output = o;
  ss.output.n_prompts = 1;
  completion_stream st({"c", 1, "m"}, ss);
  auto held = tok(0, "", 1);
  held.tokens = {4};
  CHECK(st.on_event(0, held).size() == 1);  // the echo text goes out with the first event
  auto a = st.on_event(0, t);
  f.tokens = {6};
  auto b = st.on_event(0, f);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  auto ja = json::parse(a[0]), jb = json::parse(b[0]);
  CHECK(!ja["choices"][0].contains("prompt_token_ids"));  // only on the choice's first chunk
  CHECK(ja["choices"][0]["token_ids"] == json::parse("[4,5]"));
  CHECK(jb["choices"][0]["token_ids"] == json::parse("[6]"));

  completion_stream st2({"c", 1, "m"}, ss);
  auto first = json::parse(st2.on_event(0, held).at(0));
  CHECK(first["choices"][0]["prompt_token_ids"] == json::parse("[1,2]"));
  CHECK(first["choices"][0]["token_ids"] == json::parse("[4]"));
}

TEST_CASE("LMI: generated_text and details; jsonlines stream") {
  lmi_output_settings s{"Hello", true, false};
  lmi_accumulator acc(s);
  acc.on_event(tok(0, " wor", 1, {lp(7, " wor", -0.5f)}));
  auto f = fin(0, "ld", finish_reason::length, {}, 1, 2);
  f.tokens = {8};
  f.logprobs = {lp(8, "ld", -0.25f)};
  acc.on_event(f);
  REQUIRE(acc.done());
  CHECK(dump_json(acc.build()) ==
        R"({"generated_text":" world","details":{"finish_reason":"length","generated_tokens":2,"inputs":"Hello",)"
        R"("tokens":[{"id":7,"text":" wor","log_prob":-0.5},{"id":8,"text":"ld","log_prob":-0.25}]}})");
  lmi_accumulator full({"Hello", false, true});
  full.on_event(fin(0, " you", finish_reason::stop, {}, 1, 1));
  CHECK(dump_json(full.build()) == R"({"generated_text":"Hello you"})");

  lmi_stream st({"Hi", false, false});
  auto a = st.on_event(tok(0, " a", 1, {lp(7, " a", -0.5f)}));
  CHECK(a.empty());  // held until the next token or the finish
  auto b = st.on_event(tok(0, " b", 2, {lp(8, " b", -1.0f)}));
  REQUIRE(b.size() == 1);
  CHECK(b[0] == R"({"token":{"id":7,"text":" a","log_prob":-0.5}})");
  auto c = st.on_event(fin(0, "", finish_reason::stop, {}, 1, 2));
  REQUIRE(c.size() == 1);
  CHECK(c[0] == R"({"token":{"id":8,"text":" b","log_prob":-1.0},"generated_text":" a b"})");
  CHECK(st.done());
  CHECK(std::string(lmi_finish_reason(finish_reason::stop, {})) == "eos_token");

  // decoder_input_details: details.prefill from the prompt logprobs (the first token has none).
  lmi_accumulator pre({"Hi", true, false, true});
  engine::prompt_logprobs_event plp;
  plp.first_token = {1, 0.0f, 0, "<s>"};
  plp.positions = {std::nullopt, lp(9, "Hi", -3.0f)};
  pre.on_event(plp);
  pre.on_event(fin(0, "!", finish_reason::length, {}, 2, 1));
  CHECK(dump_json(pre.build()["details"]["prefill"]) == R"([{"id":9,"text":"Hi","log_prob":-3.0}])");
  lmi_accumulator no_pre({"Hi", true, false});
  no_pre.on_event(plp);
  no_pre.on_event(fin(0, "!", finish_reason::length, {}, 2, 1));
  CHECK(!no_pre.build()["details"].contains("prefill"));
  CHECK(std::string(lmi_finish_reason(finish_reason::stop, std::string("x"))) == "stop_sequence");
}
