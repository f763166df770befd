// sequence_output on a hand-made vocabulary: the event contract of request.hpp (every
// sampled token has its own token_event, the last one included; the finished_event
// carries no tokens, only the text held back to the end), stop strings across tokens,
// EOS / stop ids / ignore_eos / min_tokens / max_tokens, UTF-8 split over byte tokens,
// the leading space of a text start, logprob texts, usage and abort.
#include "catch.hpp"

#include <optional>
#include <string>
#include <vector>

#include "engine/sequence_output.hpp"
#include "small_vocab.hpp"

using namespace vks;
using namespace vks::engine;
using namespace vks::engine::test;

namespace {

const std::vector<token_id> eos_ids{small_id::eos};

struct run_result {
  std::vector<token_event> tokens;
  std::optional<finished_event> fin;
  std::string text;  // every delta joined, the finish's included
  int n_fed = 0;
};

run_result run(const std::vector<token_id>& ids, const sampling_params& p, const std::vector<token_id>& prompt = {small_id::a}) {
  sequence_output out(small_vocab(), p, eos_ids, 0, prompt);
  run_result r;
  for (token_id id : ids) {
    if (out.finished()) break;
    auto st = out.on_token(id, std::nullopt);
    ++r.n_fed;
    r.text += st.token.text;
    r.tokens.push_back(std::move(st.token));
    if (st.finish) {
      r.text += st.finish->text;
      r.fin = std::move(st.finish);
    }
    CHECK(out.n_generated() == r.n_fed);
  }
  return r;
}

}  // namespace

TEST_CASE("sequence_output: every token has its token_event; the finish carries only the held-back tail") {
  sampling_params p;
  p.max_tokens = 3;
  // "a", then the first byte of "β" and its second byte would come: length ends it between.
  auto r = run({small_id::a, small_id::x, small_id::byte_ce, small_id::byte_b2}, p);
  REQUIRE(r.fin);
  REQUIRE(r.tokens.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(r.tokens[static_cast<std::size_t>(i)].tokens.size() == 1);
    CHECK(r.tokens[static_cast<std::size_t>(i)].n_completion_tokens == i + 1);
  }
  CHECK(r.tokens[2].tokens[0] == small_id::byte_ce);
  CHECK(r.tokens[2].text.empty());  // an unfinished character waits ...
  CHECK(r.fin->reason == finish_reason::length);
  CHECK(r.fin->tokens.empty());
  CHECK(r.fin->logprobs.empty());
  CHECK(r.fin->text == "\xCE");  // ... and is released by the finish
  CHECK(r.text == "ax\xCE");
  CHECK(r.fin->seq_usage.n_prompt_tokens == 1);
  CHECK(r.fin->seq_usage.n_completion_tokens == 3);
  CHECK(r.fin->seq_usage.n_cached_tokens == 0);

  // A whole character comes out with its second byte.
  auto whole = run({small_id::byte_ce, small_id::byte_b2, small_id::eos}, sampling_params{});
  CHECK(whole.tokens[1].text == "\xCE\xB2");
  REQUIRE(whole.fin);
  CHECK(whole.fin->text.empty());
}

TEST_CASE("sequence_output: EOS and stop ids end with their own token_event, without text") {
  auto r = run({small_id::a, small_id::eos, small_id::b}, sampling_params{});
  REQUIRE(r.fin);
  REQUIRE(r.tokens.size() == 2);  // EOS too; nothing after it is read
  CHECK(r.tokens[1].tokens[0] == small_id::eos);
  CHECK(r.tokens[1].text.empty());
  CHECK(r.fin->reason == finish_reason::stop);
  CHECK(std::holds_alternative<std::monostate>(r.fin->stop));
  CHECK(r.text == "a");

  sampling_params ids;
  ids.stop_token_ids = {small_id::x};
  auto s = run({small_id::a, small_id::x, small_id::b}, ids);
  REQUIRE(s.fin);
  CHECK(std::get<token_id>(s.fin->stop) == small_id::x);
  CHECK(s.text == "a");  // the stop id's text is dropped
  CHECK(s.tokens.size() == 2);

  // EOS releases an unfinished character in the finish.
  auto u = run({small_id::byte_ce, small_id::eos}, sampling_params{});
  REQUIRE(u.fin);
  CHECK(u.tokens[1].text.empty());
  CHECK(u.fin->text == "\xCE");
}

TEST_CASE("sequence_output: ignore_eos and min_tokens") {
  sampling_params ign;
  ign.ignore_eos = true;
  ign.max_tokens = 3;
  auto r = run({small_id::eos, small_id::a, small_id::eos, small_id::b}, ign);
  REQUIRE(r.fin);
  CHECK(r.fin->reason == finish_reason::length);
  CHECK(r.tokens.size() == 3);
  CHECK(r.text == "a");  // EOS is skipped as a special token

  sampling_params min;
  min.min_tokens = 2;
  min.stop = {"a"};
  auto m = run({small_id::eos, small_id::a, small_id::b, small_id::eos}, min);
  REQUIRE(m.fin);
  CHECK(m.fin->reason == finish_reason::stop);
  CHECK(std::get<std::string>(m.fin->stop) == "a");  // the first one that may stop
  CHECK(m.tokens.size() == 2);
  CHECK(m.text.empty());
}

TEST_CASE("sequence_output: stop strings across tokens hold text back and drop what follows") {
  sampling_params p;
  p.stop = {"ab{"};
  // " ab" then "{" complete the stop string; "x" after it never shows.
  auto r = run({small_id::x, small_id::sp_ab, small_id::lbrace, small_id::x}, p);
  REQUIRE(r.fin);
  REQUIRE(r.tokens.size() == 3);
  CHECK(r.tokens[0].text == "x");
  CHECK(r.tokens[1].text == " ");  // "ab" is held back: it may begin the stop string
  CHECK(r.tokens[2].text.empty());
  CHECK(std::get<std::string>(r.fin->stop) == "ab{");
  CHECK(r.fin->text.empty());
  CHECK(r.text == "x ");

  p.include_stop_str_in_output = true;
  CHECK(run({small_id::x, small_id::sp_ab, small_id::lbrace}, p).text == "x ab{");

  // The sequence ends another way: the held-back text is released with the last token.
  sampling_params len = p;
  len.include_stop_str_in_output = false;
  len.max_tokens = 2;
  auto l = run({small_id::x, small_id::sp_ab, small_id::lbrace}, len);
  REQUIRE(l.fin);
  CHECK(l.fin->reason == finish_reason::length);
  CHECK(l.tokens[1].text == " ab");
  CHECK(l.fin->text.empty());
}

TEST_CASE("sequence_output: the output continues the prompt unless the prompt is special tokens only") {
  CHECK(run({small_id::sp_ab, small_id::eos}, sampling_params{}, {small_id::a}).text == " ab");
  CHECK(run({small_id::sp_ab, small_id::eos}, sampling_params{}, {small_id::bos}).text == "ab");
  sequence_output at_start(small_vocab(), sampling_params{}, eos_ids, 0, std::vector<token_id>{small_id::bos});
  CHECK(at_start.at_text_start());
  (void)at_start.on_token(small_id::a, std::nullopt);
  CHECK_FALSE(at_start.at_text_start());
  sequence_output cont(small_vocab(), sampling_params{}, eos_ids, 0, std::vector<token_id>{small_id::a});
  CHECK_FALSE(cont.at_text_start());
}

TEST_CASE("sequence_output: logprob texts, sibling index and abort") {
  sampling_params p;
  p.logprobs = 1;
  sequence_output out(small_vocab(), p, eos_ids, 1, std::vector<token_id>{small_id::bos, small_id::a, small_id::b});
  position_logprobs lp;
  lp.token = {small_id::sp_ab, -0.5f, 1, {}};
  lp.top = {{small_id::sp_ab, -0.5f, 1, {}}, {small_id::byte_ce, -1.5f, 2, {}}};
  auto st = out.on_token(small_id::sp_ab, lp);
  CHECK_FALSE(st.finish);
  CHECK(st.token.seq == 1);
  CHECK(st.token.text == " ab");
  REQUIRE(st.token.logprobs.size() == 1);
  CHECK(st.token.logprobs[0].token.text == " ab");
  CHECK(st.token.logprobs[0].top[1].text == "\xCE");  // a token's bytes, even partial UTF-8
  auto a = out.abort();
  CHECK(out.finished());
  CHECK(a.seq == 1);
  CHECK(a.reason == finish_reason::abort);
  CHECK(a.text.empty());
  CHECK(a.tokens.empty());
  CHECK(a.seq_usage.n_prompt_tokens == 3);
  CHECK(a.seq_usage.n_completion_tokens == 1);
}
