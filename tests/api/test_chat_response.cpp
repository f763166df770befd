// chat.completion and chat.completion.chunk shapes against seed 000 (fixed id/created),
// n > 1, include_usage, continuous usage, logprobs, errors mid-stream.
#include "catch.hpp"

#include <map>
#include <string>
#include <vector>

#include "api/chat_response.hpp"
#include "api/errors.hpp"
#include "events.hpp"

using namespace vks;
using namespace vks::api;
using engine::finish_reason;

namespace {

using test::fin;
using test::tok;

const response_meta seed_stream_meta{"chatcmpl-2e46f7e56d474ad8874756df2b358a10", 1752128962, "/opt/ml/model"};

std::string seed_chunk(const std::string& delta, const std::string& finish = "null") {
  return R"({"id":"chatcmpl-2e46f7e56d474ad8874756df2b358a10","object":"chat.completion.chunk","created":1752128962,"model":"/opt/ml/model","choices":[{"index":0,"delta":)" +
         delta + R"(,"logprobs":null,"finish_reason":)" + finish + R"(,"stop_reason":null}]})";
}

}  // namespace

TEST_CASE("non-streaming chat.completion matches seed 000 field for field") {
  chat_output_settings s;
  s.reasoning = true;
  chat_accumulator acc(s);
  acc.on_event(tok(0, "<think>\nOkay", 2));
  acc.on_event(tok(0, ", let's try.</thi", 5));
  acc.on_event(tok(0, "nk>\n\n# Clinical", 8));
  acc.on_event(fin(0, " Case", finish_reason::stop, {}, 234, 9));
  REQUIRE(acc.done());
  const response_meta meta{"chatcmpl-30c3dbfa9f8b4208bff3f8db99e04a31", 1754927010, "/opt/ml/model"};
  CHECK(dump_json(acc.build(meta)) ==
        R"({"id":"chatcmpl-30c3dbfa9f8b4208bff3f8db99e04a31","object":"chat.completion","created":1754927010,"model":"/opt/ml/model",)"
        R"("choices":[{"index":0,"message":{"role":"assistant","content":"\n\n# Clinical Case","refusal":null,"annotations":null,)"
        R"("audio":null,"function_call":null,"tool_calls":[],"reasoning_content":"\nOkay, let's try.","reasoning":"\nOkay, let's try."},)"
        R"("logprobs":null,"finish_reason":"stop","stop_reason":null}],"service_tier":null,"system_fingerprint":null,)"
        R"("usage":{"prompt_tokens":234,"completion_tokens":9,"total_tokens":243,"prompt_tokens_details":null},)"
        R"("prompt_logprobs":null,"kv_transfer_params":null})");
}

TEST_CASE("non-reasoning models omit the reasoning keys; stop_reason and n > 1") {
  chat_output_settings s;
  s.n = 2;
  chat_accumulator acc(s);
  acc.on_event(tok(1, "B", 1));
  acc.on_event(tok(0, "A", 1));
  acc.on_event(fin(1, "", finish_reason::length, {}, 5, 3));
  CHECK(!acc.done());
  acc.on_event(fin(0, "!", finish_reason::stop, std::string("END"), 5, 2));
  REQUIRE(acc.done());
  json j = acc.build({"chatcmpl-x", 1, "m"});
  REQUIRE(j["choices"].size() == 2);
  CHECK(j["choices"][0]["message"]["content"] == "A!");
  CHECK(!j["choices"][0]["message"].contains("reasoning_content"));
  CHECK(!j["choices"][0]["message"].contains("reasoning"));
  CHECK(j["choices"][0]["stop_reason"] == "END");
  CHECK(j["choices"][1]["message"]["content"] == "B");
  CHECK(j["choices"][1]["finish_reason"] == "length");
  CHECK(j["usage"]["prompt_tokens"] == 5);
  CHECK(j["usage"]["completion_tokens"] == 5);
  CHECK(j["usage"]["total_tokens"] == 10);
  chat_accumulator acc2(chat_output_settings{});
  acc2.on_event(fin(0, "", finish_reason::stop, engine::token_id(7), 1, 1));
  CHECK(acc2.build({"i", 1, "m"})["choices"][0]["stop_reason"] == 7);
}

TEST_CASE("chat logprobs object: token, logprob (-9999 for -inf), bytes, top_logprobs") {
  chat_output_settings s;
  s.logprobs = true;
  s.top_logprobs = 1;
  chat_accumulator acc(s);
  auto t = tok(0, "Hi", 1);
  engine::position_logprobs lp;
  lp.token = {5, -0.5f, 1, "Hi"};
  lp.top = {{5, -0.5f, 1, "Hi"}, {6, -1.5f, 2, "Ho"}};
  t.logprobs = {lp};
  acc.on_event(t);
  auto f = fin(0, "", finish_reason::stop, {}, 1, 2);
  engine::position_logprobs lp2;
  lp2.token = {2, -INFINITY, 9, "\xC3"};
  f.logprobs = {lp2};
  acc.on_event(f);
  CHECK(dump_json(acc.build({"i", 1, "m"})["choices"][0]["logprobs"]) ==
        R"({"content":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]}]},)"
        "{\"token\":\"\xEF\xBF\xBD\",\"logprob\"" R"(:-9999.0,"bytes":[195],"top_logprobs":[]}]})");
}

TEST_CASE("streamed chat chunks reproduce seed 000 byte for byte") {
  chat_stream_settings s;
  s.output.reasoning = true;
  s.output.options.keys = reasoning_keys::reasoning_content;
  chat_stream st(seed_stream_meta, s);
  std::vector<std::string> got = st.start();
  int n = 0;
  auto feed = [&](const char* text) {
    for (auto& c : st.on_event(tok(0, text, ++n))) got.push_back(c);
  };
  for (const char* t : {"<think>", "\n", "Okay", ",", " let", " me", " try", " to", " figure", " this", " out", ".", ".\n",
                        "</think>", "\n\n", "The", " best", " treatment", " for", " this", " pregnant", " woman", "..."})
    feed(t);
  for (auto& c : st.on_event(fin(0, "", finish_reason::stop, {}, 10, ++n))) got.push_back(c);
  for (auto& c : st.finish()) got.push_back(c);
  std::vector<std::string> want{seed_chunk(R"({"role":"assistant","content":""})")};
  for (const char* r : {"\\n", "Okay", ",", " let", " me", " try", " to", " figure", " this", " out", ".", ".\\n"})
    want.push_back(seed_chunk(std::string(R"({"reasoning_content":")") + r + "\"}"));
  for (const char* c : {"\\n\\n", "The", " best", " treatment", " for", " this", " pregnant", " woman", "..."})
    want.push_back(seed_chunk(std::string(R"({"content":")") + c + "\"}"));
  want.push_back(seed_chunk(R"({"content":""})", "\"stop\""));
  CHECK(got == want);
}

TEST_CASE("stream: reasoning under both keys, tag split across tokens, stop_reason on the finish chunk") {
  chat_stream_settings s;
  s.output.reasoning = true;
  s.output.starts_in_reasoning = true;
  chat_stream st({"c", 1, "m"}, s);
  st.start();
  auto a = st.on_event(tok(0, "hmm</th", 1));
  REQUIRE(a.size() == 1);
  CHECK(json::parse(a[0])["choices"][0]["delta"] == json::parse(R"({"reasoning_content":"hmm","reasoning":"hmm"})"));
  auto b = st.on_event(tok(0, "ink>Yes", 2));
  REQUIRE(b.size() == 1);
  CHECK(json::parse(b[0])["choices"][0]["delta"] == json::parse(R"({"content":"Yes"})"));
  auto c = st.on_event(fin(0, "", finish_reason::stop, std::string("\n"), 3, 3));
  REQUIRE(c.size() == 1);
  auto j = json::parse(c[0]);
  CHECK(j["choices"][0]["finish_reason"] == "stop");
  CHECK(j["choices"][0]["stop_reason"] == "\n");
  CHECK(!j.contains("usage"));
  CHECK(st.done());
  CHECK(st.finish().empty());
}

TEST_CASE("stream: n = 2, include_usage and continuous usage") {
  chat_stream_settings s;
  s.output.n = 2;
  s.include_usage = true;
  s.continuous_usage_stats = true;
  s.n_prompt_tokens = 4;
  chat_stream st({"c", 7, "m"}, s);
  auto first = st.start();
  REQUIRE(first.size() == 2);
  CHECK(json::parse(first[1])["choices"][0]["index"] == 1);
  CHECK(json::parse(first[0])["usage"]["completion_tokens"] == 0);
  auto x = st.on_event(tok(1, "b", 1));
  REQUIRE(x.size() == 1);
  auto jx = json::parse(x[0]);
  CHECK(jx["choices"][0]["index"] == 1);
  CHECK(jx["usage"] == json::parse(R"({"prompt_tokens":4,"completion_tokens":1,"total_tokens":5,"prompt_tokens_details":null})"));
  CHECK(st.on_event(tok(0, "", 1)).empty());  // no empty chunks
  st.on_event(fin(0, "a", finish_reason::length, {}, 4, 2));
  CHECK(!st.done());
  st.on_event(fin(1, "", finish_reason::stop, {}, 4, 3));
  CHECK(st.done());
  auto last = st.finish();
  REQUIRE(last.size() == 1);
  CHECK(last[0] == R"({"id":"c","object":"chat.completion.chunk","created":7,"model":"m","choices":[],)"
                   R"("usage":{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9,"prompt_tokens_details":null}})");
}

namespace {
engine::token_event toks(int seq, std::string text, std::vector<engine::token_id> ids, int n) {
  auto t = tok(seq, std::move(text), n);
  t.tokens = std::move(ids);
  return t;
}
engine::finished_event fins(int seq, std::string text, std::vector<engine::token_id> ids, int n) {
  auto f = fin(seq, std::move(text), finish_reason::stop, {}, 3, n);
  f.tokens = std::move(ids);
  return f;
}
}  // namespace

TEST_CASE("return_token_ids: prompt_token_ids and each choice's token_ids, whole and streamed") {
  chat_output_settings s;
  s.prompt_token_ids = std::vector<engine::token_id>{11, 12, 13};
  chat_accumulator acc(s);
  acc.on_event(toks(0, "a", {5}, 1));
  acc.on_event(toks(0, "", {6, 7}, 3));  // text held back: the ids still count
  acc.on_event(fins(0, "bc", {8}, 4));
  json j = acc.build({"c", 1, "m"});
  CHECK(j["choices"][0]["token_ids"] == json::parse("[5,6,7,8]"));
  CHECK(j["prompt_token_ids"] == json::parse("[11,12,13]"));
  // vLLM's places: token_ids after stop_reason, prompt_token_ids before kv_transfer_params.
  const std::string text = dump_json(j);
  CHECK(text.find(R"("stop_reason":null,"token_ids":[5,6,7,8]})") != std::string::npos);
  CHECK(text.find(R"("prompt_logprobs":null,"prompt_token_ids":[11,12,13],"kv_transfer_params":null)") != std::string::npos);
  // Without the option the shape stays seed 000's.
  chat_accumulator plain(chat_output_settings{});
  plain.on_event(fins(0, "x", {8}, 1));
  json p = plain.build({"c", 1, "m"});
  CHECK(!p.contains("prompt_token_ids"));
  CHECK(!p["choices"][0].contains("token_ids"));

  chat_stream_settings ss;
  ss.output = s;
  ss.output.n = 2;
  chat_stream st({"c", 1, "m"}, ss);
  auto first = st.start();
  REQUIRE(first.size() == 2);
  for (const auto& f : first) CHECK(json::parse(f)["prompt_token_ids"] == json::parse("[11,12,13]"));
  std::vector<json> chunks;
  auto take = [&](std::vector<std::string> v) {
    for (auto& x : v) chunks.push_back(json::parse(x));
  };
  take(st.on_event(toks(0, "a", {5}, 1)));
  take(st.on_event(toks(1, "z", {9}, 1)));
  take(st.on_event(toks(0, "", {6, 7}, 3)));  // no chunk: the ids wait for the next one
  CHECK(chunks.size() == 2);
  take(st.on_event(toks(0, "b", {8}, 4)));
  take(st.on_event(fins(0, "", {10}, 5)));
  take(st.on_event(fins(1, "", {}, 1)));
  std::map<int, json> ids{{0, json::array()}, {1, json::array()}};
  for (const auto& c : chunks) {
    const auto& choice = c["choices"][0];
    REQUIRE(choice.contains("token_ids"));
    CHECK(!c.contains("prompt_token_ids"));
    for (const auto& id : choice["token_ids"]) ids[choice["index"].get<int>()].push_back(id);
  }
  CHECK(ids[0] == json::parse("[5,6,7,8,10]"));
  CHECK(ids[1] == json::parse("[9]"));
  CHECK(chunks[2]["choices"][0]["token_ids"] == json::parse("[6,7,8]"));
}

TEST_CASE("stream: an error event becomes one error payload; aborts send nothing") {
  chat_stream st({"c", 1, "m"}, chat_stream_settings{});
  st.start();
  auto e = st.on_event(engine::error_event{make_error(errc::device_lost, "GPU lost")});
  REQUIRE(e.size() == 1);
  CHECK(e[0] == R"({"error":{"message":"GPU lost","type":"ServiceUnavailableError","param":null,"code":503}})");
  CHECK(st.done());
  CHECK(st.finish().empty());
  chat_stream st2({"c", 1, "m"}, chat_stream_settings{});
  CHECK(st2.on_event(fin(0, "", finish_reason::abort, {}, 1, 0)).empty());
  CHECK(st2.done());
}
