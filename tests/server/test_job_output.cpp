// job_output (the per-kind output that drive() feeds): the chat echo applied once, to the
// non-streamed message and as the stream's echo; a completion's preset events (echo-only
// requests, no engine) answered at once, streamed or not; and which transport framing a
// job asks for. No engine: events are built by hand.
#include "catch.hpp"

#include <string>
#include <vector>

#include "api/json_parse.hpp"
#include "server/job_output.hpp"

using namespace vks;
using namespace vks::server;
namespace eng = vks::engine;

namespace {

chat_job echo_chat(bool stream) {
  chat_job job;
  job.req.echo = true;
  job.req.stream.stream = stream;
  job.prompt.ids = {1, 2, 3};
  job.prompt.echo = "Once upon";
  job.meta.id = "chatcmpl-x";
  job.meta.model = "m";
  return job;
}

std::vector<tagged_event> reply(const std::string& text) {
  std::vector<tagged_event> evs(2);
  auto& te = evs[0].ev.emplace<eng::token_event>();
  te.tokens = {7};
  te.text = text;
  te.n_completion_tokens = 1;
  auto& fe = evs[1].ev.emplace<eng::finished_event>();
  fe.reason = eng::finish_reason::length;
  fe.seq_usage.n_prompt_tokens = 3;
  fe.seq_usage.n_completion_tokens = 1;
  return evs;
}

// The concatenated delta contents of a chat stream's payloads.
std::string streamed_content(const std::vector<std::string>& payloads) {
  std::string out;
  for (const auto& p : payloads) {
    auto j = api::parse_json_or_discarded(p);
    REQUIRE_FALSE(j.is_discarded());
    for (const auto& c : j["choices"])
      if (c["delta"].contains("content") && c["delta"]["content"].is_string())
        out += c["delta"]["content"].get<std::string>();
  }
  return out;
}

completion_job echo_only(bool stream) {
  completion_job job;
  job.req.echo = true;
  job.req.stream.stream = stream;
  job.req.sampling.max_tokens = 0;
  job.prompts.push_back(completion_prompt{"Once upon a time", {1, 2, 3, 4}});
  job.meta.id = "cmpl-x";
  job.out.echo = true;
  job.out.prompt_texts = {"Once upon a time"};
  auto& te = job.preset.emplace_back();
  auto& fe = te.ev.emplace<eng::finished_event>();
  fe.reason = eng::finish_reason::length;
  fe.seq_usage.n_prompt_tokens = 4;
  return job;
}

}  // namespace

TEST_CASE("job_output: the chat echo goes in front of the message, once") {
  generation_job job = echo_chat(false);
  auto out = make_output(job);
  REQUIRE_FALSE(out->streaming());
  CHECK(out->start().empty());
  for (const auto& ev : reply(" a time")) CHECK(out->on_event(ev).empty());
  REQUIRE(out->done());
  REQUIRE_FALSE(out->error());
  auto body = out->build();
  CHECK(body["choices"][0]["message"]["content"] == "Once upon a time");
  CHECK(body["id"] == "chatcmpl-x");
}

TEST_CASE("job_output: a streamed chat carries the echo once, before the reply") {
  generation_job job = echo_chat(true);
  auto out = make_output(job);
  REQUIRE(out->streaming());
  std::vector<std::string> payloads = out->start();
  for (const auto& ev : reply(" a time"))
    for (auto& p : out->on_event(ev)) payloads.push_back(std::move(p));
  REQUIRE(out->done());
  for (auto& p : out->finish()) payloads.push_back(std::move(p));
  CHECK(streamed_content(payloads) == "Once upon a time");
}

TEST_CASE("job_output: an echo-only completion is answered from its preset events") {
  SECTION("not streamed") {
    generation_job job = echo_only(false);
    auto out = make_output(job);
    REQUIRE(out->done());  // before any engine event
    REQUIRE_FALSE(out->error());
    auto body = out->build();
    REQUIRE(body["choices"].size() == 1);
    CHECK(body["choices"][0]["text"] == "Once upon a time");
    CHECK(body["choices"][0]["finish_reason"] == "length");
    CHECK(body["usage"]["completion_tokens"] == 0);
  }
  SECTION("streamed: the preset is the stream's start") {
    generation_job job = echo_only(true);
    auto out = make_output(job);
    REQUIRE(out->streaming());
    auto payloads = out->start();
    REQUIRE(out->done());
    std::string text;
    for (const auto& p : payloads) {
      auto j = api::parse_json_or_discarded(p);
      for (const auto& c : j["choices"]) text += c["text"].get<std::string>();
    }
    CHECK(text == "Once upon a time");
  }
}

TEST_CASE("job_output: the framing a job asks for") {
  CHECK_FALSE(job_streams(generation_job(echo_chat(false))));
  CHECK(job_streams(generation_job(echo_chat(true))));
  CHECK_FALSE(job_json_lines(generation_job(echo_chat(true))));
  lmi_job lmi;
  lmi.stream = true;
  CHECK(job_streams(generation_job(lmi)));
  CHECK(job_json_lines(generation_job(lmi)));
}

TEST_CASE("job_output: messages and responses formats, typed SSE, error shape, the response store") {
  chat_job msg = echo_chat(true);
  msg.req.echo = false;
  msg.format = chat_format::messages;
  CHECK(job_typed_events(generation_job(msg)));
  CHECK(job_error_shape(generation_job(msg)) == error_shape::anthropic);
  CHECK_FALSE(job_typed_events(generation_job(echo_chat(true))));
  CHECK(job_error_shape(generation_job(echo_chat(true))) == error_shape::openai);
  {
    generation_job job = msg;
    auto out = make_output(job);
    auto payloads = out->start();
    REQUIRE(payloads.size() == 2);
    CHECK(payloads[0].rfind(R"({"type":"message_start")", 0) == 0);  // the event name leads
    for (const auto& ev : reply(" a time"))
      for (auto& p : out->on_event(ev)) payloads.push_back(std::move(p));
    CHECK(payloads.back() == R"({"type":"message_stop"})");
  }
  response_store store({8, 1u << 20, std::chrono::seconds(60)});
  for (bool stream : {false, true}) {
    chat_job r = echo_chat(stream);
    r.req.echo = false;
    r.meta.id = stream ? "resp_s" : "resp_w";
    r.format = chat_format::responses;
    auto ctx = std::make_shared<responses_context>();
    ctx->echo = api::json::object();
    ctx->conversation = api::json::array({{{"role", "user"}, {"content", "Once upon"}}});
    ctx->store = &store;
    r.responses = ctx;
    CHECK(job_error_shape(generation_job(r)) == error_shape::openai);
    generation_job job = r;
    auto out = make_output(job);
    for (auto& p : out->start()) CHECK(p.rfind(R"({"type":"response.)", 0) == 0);
    for (const auto& ev : reply(" a time")) out->on_event(ev);
    REQUIRE(out->done());
    if (stream) out->finish();
    else CHECK(out->build()["status"] == "incomplete");
    auto e = store.get(r.meta.id);
    REQUIRE(e);
    CHECK(e->response["id"] == r.meta.id);
    REQUIRE(e->conversation.size() == 2);
    CHECK(e->conversation[1]["content"] == " a time");
  }
}

TEST_CASE("job_output: an embedding job answers JSON, vectors in input order, aborts as errors", "[server][job_output][embed]") {
  embedding_job job;
  job.prompts = {{1, 2}, {3}};
  job.out.model = "m";
  job.out.n_inputs = 2;
  job.out.dimensions = 1;
  generation_job g = job;
  CHECK_FALSE(job_streams(g));
  CHECK_FALSE(job_json_lines(g));
  CHECK_FALSE(job_typed_events(g));
  auto out = make_output(g);
  CHECK_FALSE(out->streaming());
  tagged_event second{1, eng::embedding_event{{-3, 4}, 1}};
  tagged_event first{0, eng::embedding_event{{2, 0}, 2}};
  CHECK(out->on_event(second).empty());
  CHECK_FALSE(out->done());
  CHECK(out->on_event(first).empty());
  REQUIRE(out->done());
  REQUIRE_FALSE(out->error());
  auto body = out->build();
  CHECK(body["data"][0]["embedding"] == api::json::array({1.0}));   // truncated to 1, renormalised
  CHECK(body["data"][1]["embedding"] == api::json::array({-1.0}));
  CHECK(body["usage"]["prompt_tokens"] == 3);

  auto aborted = make_output(g);
  tagged_event fin{0, eng::finished_event{}};
  aborted->on_event(fin);
  REQUIRE(aborted->done());
  CHECK(aborted->error().has_value());
}
