// sequence_output with a real vocabulary (GPT-2 GGUF from shared/models/vocab): text
// deltas, stop strings across tokens, EOS, length, logprob token texts. A separate
// executable: it skips whole (exit 77, before any test) when the vocabulary file is absent.
#include "catch.hpp"
#include "precondition.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/sequence_output.hpp"

using namespace vks;
using namespace vks::engine;

namespace {

std::string gpt2_path() {
  const char* shared = std::getenv("VKS_SHARED");
  return std::string(shared ? shared : "../shared") + "/models/vocab/ggml-vocab-gpt-2.gguf";
}

const bool needs_gpt2 = vks::test_main::require("", [] {
  return std::filesystem::exists(gpt2_path()) ? std::string() : gpt2_path() + " not found";
});

// Null when the vocabulary does not load (a failure: the file exists).
const text::tokenizer* gpt2() {
  static std::unique_ptr<text::tokenizer> tok = [] {
    auto r = text::tokenizer::load(gpt2_path());
    return r.ok() ? std::move(*r) : std::unique_ptr<text::tokenizer>{};
  }();
  return tok.get();
}

struct run_result {
  std::string text;
  std::optional<finished_event> fin;
  int n_token_events = 0;
};

run_result run(const text::tokenizer& tok, const std::vector<token_id>& ids, const sampling_params& p) {
  sequence_output out(tok, p, 0, 5, 0);
  run_result r;
  for (token_id id : ids) {
    if (out.finished()) break;
    event ev = out.on_token(id, std::nullopt);
    if (auto* t = std::get_if<token_event>(&ev)) {
      r.text += t->text;
      ++r.n_token_events;
    } else {
      auto& f = std::get<finished_event>(ev);
      r.text += f.text;
      r.fin = f;
    }
  }
  return r;
}

}  // namespace

TEST_CASE("sequence_output: stop strings, EOS and length on GPT-2 tokens") {
  const text::tokenizer* tok = gpt2();
  REQUIRE(tok);
  auto ids = tok->encode("Hello world. Bye now", false);
  REQUIRE(ids.size() >= 4);

  sampling_params p;
  p.stop = {"ld. B"};
  auto r = run(*tok, ids, p);
  REQUIRE(r.fin);
  CHECK(r.fin->reason == finish_reason::stop);
  CHECK(std::get<std::string>(r.fin->stop) == "ld. B");
  CHECK(r.text == "Hello wor");
  CHECK(r.fin->seq_usage.n_prompt_tokens == 5);

  sampling_params len;
  len.max_tokens = 2;
  auto r2 = run(*tok, ids, len);
  REQUIRE(r2.fin);
  CHECK(r2.fin->reason == finish_reason::length);
  CHECK(r2.text == tok->decode(std::vector<token_id>(ids.begin(), ids.begin() + 2)));
  CHECK(r2.fin->seq_usage.n_completion_tokens == 2);

  auto with_eos = ids;
  with_eos.insert(with_eos.begin() + 2, tok->eos());
  auto r3 = run(*tok, with_eos, sampling_params{});
  REQUIRE(r3.fin);
  CHECK(r3.fin->reason == finish_reason::stop);
  CHECK(std::holds_alternative<std::monostate>(r3.fin->stop));
  CHECK(r3.text == tok->decode(std::vector<token_id>(ids.begin(), ids.begin() + 2)));

  sampling_params none;
  auto r4 = run(*tok, ids, none);
  CHECK(!r4.fin);
  CHECK(r4.text == "Hello world. Bye now");
}

TEST_CASE("sequence_output: logprob texts and abort") {
  const text::tokenizer* tok = gpt2();
  REQUIRE(tok);
  auto ids = tok->encode(" world", false);
  REQUIRE(ids.size() == 1);
  sampling_params p;
  p.logprobs = 1;
  sequence_output out(*tok, p, 1, 3, 2);
  position_logprobs lp;
  lp.token = {ids[0], -0.5f, 1, {}};
  lp.top = {{ids[0], -0.5f, 1, {}}};
  event ev = out.on_token(ids[0], lp);
  auto& t = std::get<token_event>(ev);
  CHECK(t.seq == 1);
  CHECK(t.text == " world");
  REQUIRE(t.logprobs.size() == 1);
  CHECK(t.logprobs[0].token.text == " world");
  CHECK(t.logprobs[0].top[0].text == " world");
  auto a = out.abort();
  CHECK(a.reason == finish_reason::abort);
  CHECK(a.seq_usage.n_completion_tokens == 1);
  CHECK(a.seq_usage.n_cached_tokens == 2);
  CHECK(out.finished());
}
