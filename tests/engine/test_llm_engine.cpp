// The engine thread end to end on the reference backend with the real stories260K model:
// generation, batching equivalence, abort, n > 1, admission control.
#include "catch.hpp"
#include "precondition.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <new>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "engine/llm_engine.hpp"
#include "gpu/backend.hpp"
#include "gpu/fault.hpp"
#include "model/model_file.hpp"
#include "model/runner.hpp"
#include "text/grammar/json_schema.hpp"
#include "text/grammar/parsers.hpp"
#include "text/tokenizer/tokenizer.hpp"
#include "testing/test_model.hpp"
#include <unistd.h>

using namespace vks;
using namespace std::chrono_literals;

namespace {

std::string shared_path(const std::string& rel) {
  const char* s = std::getenv("VKS_SHARED");
  return std::string(s ? s : "../shared") + "/" + rel;
}

// Collects a request's events; wait() blocks until the terminal event.
struct collector : engine::event_sink {
  std::mutex mu;
  std::condition_variable cv;
  int n_seqs = 1;
  int n_finished = 0;
  bool failed = false;
  vks::error error;  // the error_event's, when failed
  std::vector<std::string> text;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<engine::finished_event> finished;
  std::vector<engine::prompt_logprobs_event> prompt_lps;
  std::vector<std::vector<engine::position_logprobs>> lps;  // per sequence, generated positions
  bool prompt_lps_before_tokens = true;
  std::vector<float> embedding;  // an embedding request's vector
  int embedded_prompt_tokens = 0;
  // The event contract (request.hpp): one token per token_event, none after a sequence's
  // finished_event, and a finished_event never carries tokens or logprobs.
  bool contract_ok = true;
  std::vector<bool> seq_finished;
  explicit collector(int n = 1) : n_seqs(n), text(static_cast<size_t>(n)), tokens(static_cast<size_t>(n)) {}

  void on_event(engine::event ev) noexcept override {
    std::lock_guard lk(mu);
    if (lps.size() < text.size()) lps.resize(text.size());
    if (seq_finished.size() < text.size()) seq_finished.resize(text.size());
    if (auto* p = std::get_if<engine::prompt_logprobs_event>(&ev)) {
      for (const auto& t : tokens) prompt_lps_before_tokens = prompt_lps_before_tokens && t.empty();
      prompt_lps.push_back(*p);
    } else if (auto* t = std::get_if<engine::token_event>(&ev)) {
      if (t->tokens.size() != 1 || seq_finished[static_cast<size_t>(t->seq)]) contract_ok = false;
      for (const auto& x : t->logprobs) lps[static_cast<size_t>(t->seq)].push_back(x);
      text[static_cast<size_t>(t->seq)] += t->text;
      for (auto id : t->tokens) tokens[static_cast<size_t>(t->seq)].push_back(id);
    } else if (auto* f = std::get_if<engine::finished_event>(&ev)) {
      if (!f->tokens.empty() || !f->logprobs.empty()) contract_ok = false;
      seq_finished[static_cast<size_t>(f->seq)] = true;
      for (const auto& x : f->logprobs) lps[static_cast<size_t>(f->seq)].push_back(x);
      text[static_cast<size_t>(f->seq)] += f->text;
      finished.push_back(*f);
      ++n_finished;
    } else if (auto* e = std::get_if<engine::error_event>(&ev)) {
      failed = true;
      error = e->err;
    } else if (auto* m = std::get_if<engine::embedding_event>(&ev)) {
      embedding = m->embedding;
      embedded_prompt_tokens = m->n_prompt_tokens;
      ++n_finished;
    }
    cv.notify_all();
  }
  bool wait(std::chrono::seconds limit = 120s) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, limit, [&] { return failed || n_finished == n_seqs; });
  }
  size_t n_tokens(int seq = 0) {
    std::lock_guard lk(mu);
    return tokens[static_cast<size_t>(seq)].size();
  }
};

// VKS_ENGINE_BACKEND=vk runs the engine on Vulkan (test 'llm-engine-vk'); the executable
// skips whole (exit 77, before any test) when no Vulkan device is present. Default: the
// reference backend.
bool on_vulkan() {
  const char* which = std::getenv("VKS_ENGINE_BACKEND");
  return which != nullptr && std::string(which) == "vk";
}

const bool needs_vulkan = vks::test_main::require("", [] {
  if (!on_vulkan()) return std::string();
  auto be = gpu::make_vk_backend({});
  return be ? std::string() : "no Vulkan backend: " + be.error().message;
});

std::unique_ptr<gpu::backend> test_backend() {
  if (!on_vulkan()) return gpu::make_ref_backend();
  auto be = gpu::make_vk_backend({});
  REQUIRE(be.ok());
  return std::move(*be);
}

struct fixture {
  std::unique_ptr<gpu::backend> be = test_backend();
  model::model_file file;
  std::unique_ptr<model::runner> runner;
  std::unique_ptr<text::tokenizer> tok;

  // overlap_record: runner_options::overlap_record (-1 auto: off on lavapipe).
  explicit fixture(int kv_blocks = 64, int overlap_record = -1) {
    auto f = model::model_file::open(shared_path("models/stories260K/stories260K.gguf"));
    REQUIRE(f.ok());
    file = std::move(*f);
    model::runner_options ro;
    ro.max_context = 256;
    ro.kv_blocks = kv_blocks;
    ro.overlap_record = overlap_record;
    auto r = model::runner::load(file, *be, ro);
    REQUIRE(r.ok());
    runner = std::move(*r);
    auto t = text::tokenizer::from_gguf(*file.gguf());
    REQUIRE(t.ok());
    tok = std::move(*t);
  }
  std::unique_ptr<engine::llm_engine> start(engine::engine_options o = {}) {
    auto e = engine::llm_engine::start(*runner, *tok, o);
    REQUIRE(e.ok());
    return std::move(*e);
  }
  engine::request greedy(const std::string& prompt, int max_tokens) const {
    engine::request rq;
    rq.prompt = tok->encode(prompt, true);
    rq.params.temperature = 0;
    rq.params.max_tokens = max_tokens;
    return rq;
  }
};

// tiny-gemma3 (layers 0-4 sliding, 5 global) with a window of 20: wider than a block (16),
// narrower than the test sequences.
result<model::model_file> window_model_file(const char* shape = "tiny-gemma3") {
  auto spec = model::test_model_shape(shape);
  REQUIRE(spec.ok());
  spec->config.sliding_window = 20;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("vks_window_" + std::to_string(::getpid()) + ".gguf")).string();
  REQUIRE(model::write_test_gguf(*spec, path).ok());
  auto file = model::model_file::open(path);
  std::filesystem::remove(path);
  return file;
}

std::string golden_text() {
  std::ifstream in(shared_path("models/stories260K/expected_greedy_t0_llama2c.txt"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  return all.substr(all.find('\n') + 1);
}

}  // namespace

TEST_CASE("engine: greedy stories260K matches llama2.c's published output", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start();
  auto sink = std::make_shared<collector>();
  auto h = eng->submit(fx.greedy("", 200), sink);
  REQUIRE(h.ok());
  REQUIRE(sink->wait());
  REQUIRE_FALSE(sink->failed);
  CHECK(sink->finished.at(0).reason == engine::finish_reason::length);
  CHECK(sink->finished.at(0).seq_usage.n_completion_tokens == 200);
  std::string gold = golden_text();
  INFO("ours: " << sink->text[0]);
  CHECK(gold.rfind(sink->text[0], 0) == 0);  // ours is a prefix of the golden text
  CHECK(sink->text[0].size() > 400);
}

TEST_CASE("engine: every sampled token has its own event; a stop string ends the text", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start();
  auto rq = fx.greedy("", 40);
  rq.params.logprobs = 1;
  rq.params.n = 2;
  auto sink = std::make_shared<collector>(2);
  REQUIRE(eng->submit(rq, sink).ok());
  REQUIRE(sink->wait());
  REQUIRE(sink->n_finished == 2);
  CHECK(sink->contract_ok);
  const std::string gold = golden_text();
  for (size_t i = 0; i < 2; ++i) {
    const auto& f = sink->finished.at(i);
    const auto seq = static_cast<size_t>(f.seq);
    CHECK(f.reason == engine::finish_reason::length);
    CHECK(sink->tokens[seq].size() == 40);
    CHECK(sink->lps[seq].size() == 40);
    CHECK(f.seq_usage.n_completion_tokens == 40);
    CHECK(gold.rfind(sink->text[seq], 0) == 0);
  }
  // A stop string inside the greedy text: the output is the text before it; the token
  // that completed it was sent like every other.
  const std::string& full = sink->text[0];
  const auto cut = full.find(' ', 20);
  REQUIRE(cut != std::string::npos);
  const std::string stop = full.substr(cut, 4);
  auto st = fx.greedy("", 40);
  st.params.stop = {stop};
  auto s2 = std::make_shared<collector>();
  REQUIRE(eng->submit(st, s2).ok());
  REQUIRE(s2->wait());
  REQUIRE(s2->n_finished == 1);
  CHECK(s2->contract_ok);
  CHECK(s2->finished[0].reason == engine::finish_reason::stop);
  CHECK(std::get<std::string>(s2->finished[0].stop) == stop);
  CHECK(s2->text[0] == full.substr(0, full.find(stop)));
  CHECK(static_cast<int>(s2->tokens[0].size()) == s2->finished[0].seq_usage.n_completion_tokens);
  CHECK(s2->tokens[0].size() < 40);
}

TEST_CASE("engine: batched sequences equal each run alone", "[engine][llm]") {
  fixture fx;
  const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Lily and Tom went to the park. They"};
  std::vector<std::vector<int32_t>> alone;
  {
    auto eng = fx.start();
    for (const auto& p : prompts) {
      auto sink = std::make_shared<collector>();
      REQUIRE(eng->submit(fx.greedy(p, 40), sink).ok());
      REQUIRE(sink->wait());
      alone.push_back(sink->tokens[0]);
    }
  }
  auto eng = fx.start({.sched = {.max_num_batched_tokens = 16, .max_num_seqs = 8}});
  std::vector<std::shared_ptr<collector>> sinks;
  for (const auto& p : prompts) {
    sinks.push_back(std::make_shared<collector>());
    REQUIRE(eng->submit(fx.greedy(p, 40), sinks.back()).ok());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    REQUIRE(sinks[i]->wait());
    CHECK(sinks[i]->tokens[0] == alone[i]);
  }
}

TEST_CASE("engine: abort stops a request and frees its blocks", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start();
  auto sink = std::make_shared<collector>();
  auto h = eng->submit(fx.greedy("Once", 250), sink);
  REQUIRE(h.ok());
  for (int i = 0; i < 2000 && sink->n_tokens() < 3; ++i) std::this_thread::sleep_for(1ms);
  eng->abort(*h);
  REQUIRE(sink->wait());
  CHECK(sink->finished.at(0).reason == engine::finish_reason::abort);
  CHECK(sink->finished.at(0).seq_usage.n_completion_tokens < 250);
  for (int i = 0; i < 2000 && eng->metrics().kv_blocks_used.load() != 0; ++i) std::this_thread::sleep_for(1ms);
  CHECK(eng->metrics().kv_blocks_used.load() == 0);
  CHECK(eng->stats().n_aborted == 1);
  eng->abort(*h);  // idempotent
  eng->abort(engine::request_handle{999});
}

TEST_CASE("engine: n = 2 siblings share the prompt and a seed reproduces them", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start();
  auto run = [&] {
    engine::request rq = fx.greedy("Once upon a time there was a dog", 30);
    rq.params.temperature = 1.0f;
    rq.params.n = 2;
    rq.params.seed = 1234;
    auto sink = std::make_shared<collector>(2);
    REQUIRE(eng->submit(rq, sink).ok());
    REQUIRE(sink->wait());
    REQUIRE(sink->n_finished == 2);
    return sink->tokens;
  };
  auto a = run();
  auto b = run();
  CHECK(a == b);
  CHECK(a[0] != a[1]);  // different seeds per sibling (seed + i)
}

TEST_CASE("engine: admission control refuses beyond the queue bound", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start({.sched = {.max_num_batched_tokens = 64, .max_num_seqs = 1}, .max_queued_seqs = 1});
  auto a = std::make_shared<collector>();
  auto ha = eng->submit(fx.greedy("Once", 250), a);
  REQUIRE(ha.ok());
  for (int i = 0; i < 5000 && a->n_tokens() < 1; ++i) std::this_thread::sleep_for(1ms);
  auto b = std::make_shared<collector>();
  REQUIRE(eng->submit(fx.greedy("The", 5), b).ok());  // waits: one sequence at a time
  auto c = std::make_shared<collector>();
  auto hc = eng->submit(fx.greedy("A", 5), c);
  REQUIRE_FALSE(hc.ok());
  CHECK(hc.error().code == errc::overloaded);
  eng->abort(*ha);
  REQUIRE(a->wait());
  REQUIRE(b->wait());
  CHECK(b->finished.at(0).reason == engine::finish_reason::length);
}

TEST_CASE("engine: admission counts queued sequences (prompts x n), not requests", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start({.sched = {.max_num_batched_tokens = 64, .max_num_seqs = 1}, .max_queued_seqs = 4});
  auto a = std::make_shared<collector>();
  auto ha = eng->submit(fx.greedy("Once", 250), a);
  REQUIRE(ha.ok());
  for (int i = 0; i < 5000 && a->n_tokens() < 1; ++i) std::this_thread::sleep_for(1ms);
  auto three = fx.greedy("The", 3);
  three.params.n = 3;
  auto b = std::make_shared<collector>(3);
  auto hb = eng->submit(three, b);  // 3 sequences wait behind `a`
  REQUIRE(hb.ok());
  auto two = fx.greedy("A", 3);
  two.params.n = 2;
  auto c = std::make_shared<collector>(2);
  auto hc = eng->submit(two, c);  // 3 + 2 > 4
  REQUIRE_FALSE(hc.ok());
  CHECK(hc.error().code == errc::overloaded);
  CHECK(hc.error().message.find("sequences") != std::string::npos);
  auto d = std::make_shared<collector>();
  REQUIRE(eng->submit(fx.greedy("A", 3), d).ok());  // 3 + 1 fits
  eng->abort(*ha);
  REQUIRE(a->wait());
  REQUIRE(b->wait());
  REQUIRE(d->wait());
  // Everything left the queue: a request of 4 sequences is admitted again.
  auto four = fx.greedy("Once", 2);
  four.params.n = 4;
  auto e = std::make_shared<collector>(4);
  REQUIRE(eng->submit(four, e).ok());
  REQUIRE(e->wait());
}

TEST_CASE("engine: a small request's group is admitted before a big group's later prompts", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start({.sched = {.max_num_batched_tokens = 64, .max_num_seqs = 2}});
  std::vector<std::shared_ptr<collector>> big;
  for (int i = 0; i < 6; ++i) {
    auto rq = fx.greedy("Once upon a time", 30);
    rq.params.ignore_eos = true;
    rq.group = 7;  // one client request with six prompts
    big.push_back(std::make_shared<collector>());
    REQUIRE(eng->submit(rq, big.back()).ok());
  }
  for (int i = 0; i < 5000 && big[0]->n_tokens() < 1; ++i) std::this_thread::sleep_for(1ms);
  auto rq = fx.greedy("The", 3);
  rq.params.ignore_eos = true;
  rq.group = 9;
  // Notes, on the engine thread when the small request ends, how far prompts 4 and 6 are.
  struct noting final : collector {
    std::vector<std::shared_ptr<collector>>* big = nullptr;
    std::atomic<long> at_end_4{-1}, at_end_6{-1};
    void on_event(engine::event ev) noexcept override {
      if (std::holds_alternative<engine::finished_event>(ev)) {
        at_end_4 = static_cast<long>((*big)[3]->n_tokens());
        at_end_6 = static_cast<long>((*big)[5]->n_tokens());
      }
      collector::on_event(std::move(ev));
    }
  };
  auto small = std::make_shared<noting>();
  small->big = &big;
  REQUIRE(eng->submit(rq, small).ok());
  REQUIRE(small->wait());
  // Round-robin: the small group takes the second free slot, next to prompt 3, so
  // prompts 4-6 have not produced a token when it ends (FIFO would run all six first).
  CHECK(small->at_end_4.load() == 0);
  CHECK(small->at_end_6.load() == 0);
  for (auto& b : big) REQUIRE(b->wait());
}

TEST_CASE("engine: a different cache_salt never hits another request's cached prefix", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start();
  const std::string prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her dog.";
  auto run = [&](const std::string& salt) {
    auto rq = fx.greedy(prompt, 4);
    rq.cache_salt = salt;
    auto sink = std::make_shared<collector>();
    REQUIRE(eng->submit(rq, sink).ok());
    REQUIRE(sink->wait());
    REQUIRE(sink->n_finished == 1);
    return sink->finished.at(0).seq_usage;
  };
  const auto first = run("alice");
  REQUIRE(first.n_prompt_tokens > 32);
  CHECK(first.n_cached_tokens == 0);
  CHECK(run("mallory").n_cached_tokens == 0);  // another salt: computed afresh
  CHECK(run("").n_cached_tokens == 0);         // unsalted: computed afresh
  CHECK(run("alice").n_cached_tokens > 0);     // the same salt shares
  CHECK(run("").n_cached_tokens > 0);          // unsalted requests share among themselves
}

TEST_CASE("engine: invalid requests are refused with clear errors", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start();
  auto sink = std::make_shared<collector>();
  engine::request empty;
  auto r1 = eng->submit(empty, sink);
  REQUIRE_FALSE(r1.ok());
  CHECK(r1.error().code == errc::invalid_argument);
  auto big = fx.greedy("Once", 10);
  big.prompt.push_back(100000);
  auto r2 = eng->submit(big, sink);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().code == errc::invalid_argument);
  auto overflow = fx.greedy("Once", 100000);
  auto r3 = eng->submit(overflow, sink);
  REQUIRE_FALSE(r3.ok());
  CHECK(r3.error().code == errc::context_overflow);
  eng->drain();
  auto r4 = eng->submit(fx.greedy("Once", 5), sink);
  REQUIRE_FALSE(r4.ok());
  CHECK(r4.error().code == errc::shutting_down);
}

TEST_CASE("engine: a repeated prompt is served from the prefix cache with the same output", "[engine][llm]") {
  fixture fx;
  auto eng = fx.start();
  const std::string prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her dog.";
  auto first = std::make_shared<collector>();
  REQUIRE(eng->submit(fx.greedy(prompt, 20), first).ok());
  REQUIRE(first->wait());
  const int n_prompt = first->finished.at(0).seq_usage.n_prompt_tokens;
  REQUIRE(n_prompt > 32);
  CHECK(first->finished.at(0).seq_usage.n_cached_tokens == 0);

  auto second = std::make_shared<collector>();
  REQUIRE(eng->submit(fx.greedy(prompt, 20), second).ok());
  REQUIRE(second->wait());
  const int cached = second->finished.at(0).seq_usage.n_cached_tokens;
  // Whole blocks only, and never the last prompt token (its logits must be computed).
  CHECK(cached > 0);
  CHECK(cached % fx.runner->kv().block_size() == 0);
  CHECK(cached < n_prompt);
  CHECK(cached >= (n_prompt - 1) / fx.runner->kv().block_size() * fx.runner->kv().block_size());
  CHECK(second->tokens[0] == first->tokens[0]);
  CHECK(eng->metrics().prefix_hits.load() >= static_cast<std::uint64_t>(cached));
}

TEST_CASE("engine: a pool too small for everyone preempts and still finishes every request", "[engine][llm]") {
  // 20 blocks of 16 tokens: four sequences of ~100 tokens cannot all be resident.
  fixture fx(20);
  const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Lily and Tom", "A big dog"};
  std::vector<std::vector<int32_t>> alone;
  {
    auto eng = fx.start();
    for (const auto& p : prompts) {
      auto sink = std::make_shared<collector>();
      REQUIRE(eng->submit(fx.greedy(p, 90), sink).ok());
      REQUIRE(sink->wait());
      alone.push_back(sink->tokens[0]);
    }
  }
  auto eng = fx.start({.sched = {.max_num_batched_tokens = 64, .max_num_seqs = 8}, .enable_prefix_caching = false});
  std::vector<std::shared_ptr<collector>> sinks;
  for (const auto& p : prompts) {
    sinks.push_back(std::make_shared<collector>());
    REQUIRE(eng->submit(fx.greedy(p, 90), sinks.back()).ok());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    REQUIRE(sinks[i]->wait());
    REQUIRE_FALSE(sinks[i]->failed);
    CHECK(sinks[i]->finished.at(0).reason == engine::finish_reason::length);
    CHECK(sinks[i]->tokens[0] == alone[i]);
  }
  CHECK(eng->metrics().preemptions.load() > 0);
  for (int i = 0; i < 2000 && eng->metrics().kv_blocks_used.load() != 0; ++i) std::this_thread::sleep_for(1ms);
  CHECK(eng->metrics().kv_blocks_used.load() == 0);
}

TEST_CASE("engine: prompt logprobs score every prompt token as generation would", "[engine][llm]") {
  // Position p of the prompt is scored with the logits the model gives after p tokens, so
  // it must agree with the logprobs of a request whose prompt is those p tokens.
  fixture fx;
  auto eng = fx.start({.sched = {.max_num_batched_tokens = 8, .max_num_seqs = 8}});  // chunked prefill
  const std::string text = "Once upon a time, there was a little dog. He";
  // Warm the prefix cache with the same prompt: prompt logprobs must not be served from it.
  auto warm = std::make_shared<collector>();
  REQUIRE(eng->submit(fx.greedy(text, 1), warm).ok());
  REQUIRE(warm->wait());
  auto rq = fx.greedy(text, 3);
  rq.params.prompt_logprobs = 2;
  rq.params.n = 2;
  auto sink = std::make_shared<collector>(2);
  REQUIRE(eng->submit(rq, sink).ok());
  REQUIRE(sink->wait());
  REQUIRE_FALSE(sink->failed);
  REQUIRE(sink->prompt_lps.size() == 1);  // once per request, not per sequence
  CHECK(sink->prompt_lps_before_tokens);
  const auto& ev = sink->prompt_lps[0];
  const size_t L = rq.prompt.size();
  REQUIRE(ev.positions.size() == L);
  CHECK(ev.first_token.id == rq.prompt[0]);
  CHECK_FALSE(ev.positions[0].has_value());
  CHECK(sink->finished.at(0).seq_usage.n_cached_tokens == 0);
  for (size_t p = 1; p < L; ++p) {
    REQUIRE(ev.positions[p].has_value());
    const auto& pos = *ev.positions[p];
    CHECK(pos.token.id == rq.prompt[p]);
    CHECK(pos.token.text == fx.tok->token_text(rq.prompt[p]));
    REQUIRE(pos.top.size() == 2);
    CHECK(pos.token.logprob <= pos.top[0].logprob + 1e-6f);
    CHECK(pos.token.rank >= 1);
  }
  // Spot-check three positions against generation from the prefix alone.
  for (size_t p : {size_t{1}, L / 2, L - 1}) {
    engine::request pre;
    pre.prompt.assign(rq.prompt.begin(), rq.prompt.begin() + static_cast<std::ptrdiff_t>(p));
    pre.params.temperature = 0;
    pre.params.max_tokens = 1;
    pre.params.logprobs = 2;
    auto one = std::make_shared<collector>();
    REQUIRE(eng->submit(pre, one).ok());
    REQUIRE(one->wait());
    REQUIRE(one->lps.at(0).size() == 1);
    const auto& gen = one->lps[0][0];
    const auto& pos = *ev.positions[p];
    INFO("position " << p);
    for (size_t j = 0; j < 2; ++j) {
      CHECK(gen.top.at(j).id == pos.top.at(j).id);
      CHECK(gen.top.at(j).logprob == Approx(pos.top.at(j).logprob).margin(1e-3));
    }
  }
  // Both sequences still generate.
  for (const auto& f : sink->finished) CHECK(f.seq_usage.n_completion_tokens == 3);
}

TEST_CASE("engine: structured output holds every sibling to the grammar", "[engine][llm][grammar]") {
  fixture fx;
  auto eng = fx.start();
  auto choice = text::grammar::choice_grammar({"yes", "no", "a dog"});
  REQUIRE(choice.ok());
  engine::request rq = fx.greedy("Once upon a time there was a", 40);
  rq.params.temperature = 1.0f;
  rq.params.seed = 7;
  rq.params.n = 4;
  rq.params.min_tokens = 30;  // yields to the grammar once only EOS may follow
  rq.constraint = engine::output_constraint{std::make_shared<const text::grammar::grammar>(std::move(*choice)), ""};
  auto sink = std::make_shared<collector>(4);
  REQUIRE(eng->submit(rq, sink).ok());
  REQUIRE(sink->wait());
  REQUIRE(sink->n_finished == 4);
  for (int i = 0; i < 4; ++i) {
    INFO("sibling " << i << ": " << sink->text[static_cast<size_t>(i)]);
    const auto& t = sink->text[static_cast<size_t>(i)];
    CHECK((t == "yes" || t == "no" || t == "a dog"));
  }
  for (const auto& f : sink->finished) CHECK(f.reason == engine::finish_reason::stop);

  // A JSON schema: the story model writes a conforming object.
  auto schema = text::grammar::compile_json_schema(nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":10},"n":{"type":"integer"},
          "ok":{"type":"boolean"}},"required":["name","n","ok"]})"));
  REQUIRE(schema.ok());
  engine::request js = fx.greedy("Once upon a time", 120);
  js.constraint = engine::output_constraint{std::make_shared<const text::grammar::grammar>(std::move(*schema)), ""};
  auto s2 = std::make_shared<collector>();
  REQUIRE(eng->submit(js, s2).ok());
  REQUIRE(s2->wait());
  INFO("output: " << s2->text[0]);
  REQUIRE(s2->finished.at(0).reason == engine::finish_reason::stop);
  auto doc = nlohmann::json::parse(s2->text[0], nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["name"].is_string());
  CHECK(doc["n"].is_number_integer());
  CHECK(doc["ok"].is_boolean());
  CHECK(doc.size() == 3);
}

TEST_CASE("engine: a constraint behind a marker leaves the text before it free", "[engine][llm][grammar]") {
  fixture fx;
  auto eng = fx.start();
  // Unconstrained greedy output first: its first words become the marker.
  engine::request free_rq = fx.greedy("Once upon a time", 12);
  auto s1 = std::make_shared<collector>();
  REQUIRE(eng->submit(free_rq, s1).ok());
  REQUIRE(s1->wait());
  const std::string marker = s1->text[0].substr(0, 8);
  REQUIRE(marker.size() == 8);
  auto re = text::grammar::parse_regex("[0-9]{3}");
  REQUIRE(re.ok());
  engine::request rq = fx.greedy("Once upon a time", 60);
  rq.constraint = engine::output_constraint{std::make_shared<const text::grammar::grammar>(std::move(*re)), marker};
  auto s2 = std::make_shared<collector>();
  REQUIRE(eng->submit(rq, s2).ok());
  REQUIRE(s2->wait());
  const std::string& out = s2->text[0];
  INFO("output: " << out);
  REQUIRE(out.rfind(marker, 0) == 0);  // the same free start
  const auto at = out.find(marker) + marker.size();
  std::string rest = out.substr(at);
  // Whatever followed the marker inside its token, then exactly three digits.
  REQUIRE(rest.size() >= 3);
  const std::string digits = rest.substr(rest.size() - 3);
  CHECK(digits.find_first_not_of("0123456789") == std::string::npos);
  CHECK(s2->finished.at(0).reason == engine::finish_reason::stop);
}

TEST_CASE("engine: a grammar past the matcher's caps fails its request alone", "[engine][llm][grammar][hostile]") {
  fixture fx;
  auto eng = fx.start();
  // Only runs of "a" are allowed for 40 characters, and every "a" doubles the stacks
  // (each remembers a different b/c suffix): the cap ends it long before that.
  auto ambiguous = text::grammar::parse_gbnf("root ::= \"a\" root \"b\" | \"a\" root \"c\" | \"a\"{40} \"x\"\n");
  REQUIRE(ambiguous.ok());
  engine::request bad = fx.greedy("Once upon a time", 60);
  bad.id = "ambiguous";
  bad.constraint = engine::output_constraint{std::make_shared<const text::grammar::grammar>(std::move(*ambiguous)), ""};
  auto bad_sink = std::make_shared<collector>();
  engine::request plain = fx.greedy("", 30);  // the golden text's start
  auto plain_sink = std::make_shared<collector>();
  REQUIRE(eng->submit(bad, bad_sink).ok());
  REQUIRE(eng->submit(plain, plain_sink).ok());
  REQUIRE(bad_sink->wait());
  REQUIRE(plain_sink->wait());
  CHECK(bad_sink->failed);
  CHECK(bad_sink->error.code == errc::invalid_argument);
  CHECK(bad_sink->error.message.find("too ambiguous") != std::string::npos);
  CHECK(bad_sink->n_finished == 0);
  CHECK_FALSE(plain_sink->failed);
  REQUIRE(plain_sink->n_finished == 1);
  CHECK(plain_sink->finished[0].seq_usage.n_completion_tokens == 30);
  CHECK(golden_text().rfind(plain_sink->text[0], 0) == 0);
  CHECK(eng->healthy());
  CHECK(eng->stats().n_failed == 1);
}

TEST_CASE("engine: an exception while serving one request fails only that request", "[engine][llm][hostile]") {
  fixture fx;
  engine::engine_options o;
  o.fault_hook = [](const engine::request& rq) {
    if (rq.id == "throws") throw std::runtime_error("injected fault");
    if (rq.id == "oom") throw std::bad_alloc();
  };
  auto eng = fx.start(o);
  engine::request thrower = fx.greedy("Once upon a time", 20);
  thrower.id = "throws";
  engine::request oom = fx.greedy("Once upon a time", 20);
  oom.id = "oom";
  oom.params.n = 2;
  engine::request plain = fx.greedy("", 30);  // the golden text's start
  auto s_throw = std::make_shared<collector>(), s_oom = std::make_shared<collector>(2), s_plain = std::make_shared<collector>();
  REQUIRE(eng->submit(thrower, s_throw).ok());
  REQUIRE(eng->submit(oom, s_oom).ok());
  REQUIRE(eng->submit(plain, s_plain).ok());
  REQUIRE(s_throw->wait());
  REQUIRE(s_oom->wait());
  REQUIRE(s_plain->wait());
  CHECK(s_throw->failed);
  CHECK(s_throw->error.code == errc::internal);
  CHECK(s_throw->error.message.find("injected fault") != std::string::npos);
  CHECK(s_oom->failed);
  CHECK(s_oom->error.code == errc::out_of_memory);
  CHECK(s_oom->n_finished == 0);
  REQUIRE_FALSE(s_plain->failed);
  REQUIRE(s_plain->n_finished == 1);
  CHECK(golden_text().rfind(s_plain->text[0], 0) == 0);
  CHECK(eng->healthy());
  CHECK(eng->stats().n_failed == 2);
  // The engine goes on serving.
  auto again = std::make_shared<collector>();
  REQUIRE(eng->submit(fx.greedy("Once upon a time", 5), again).ok());
  REQUIRE(again->wait());
  CHECK(again->n_finished == 1);
  CHECK_FALSE(again->failed);
}

// Operations (docs/deploying.md): the watchdog reads progress(); a lost device fails
// everything and marks the engine unhealthy. Faults come from the gpu/fault.hpp test hook.
TEST_CASE("engine: progress() shows a hung step while it runs, and counts steps", "[engine][llm][ops]") {
  fixture fx;
  auto eng = fx.start();
  const auto before = eng->progress();
  CHECK(before.busy_for == 0ns);
  gpu::fault::arm_hang(600ms);
  auto c = std::make_shared<collector>();
  REQUIRE(eng->submit(fx.greedy("Once upon a time", 3), c).ok());
  bool seen_busy = false;
  for (int i = 0; i < 200 && !seen_busy; ++i) {
    seen_busy = eng->progress().busy_for >= 300ms;
    std::this_thread::sleep_for(5ms);
  }
  CHECK(seen_busy);
  REQUIRE(c->wait());
  CHECK_FALSE(c->failed);
  bool idle = false;
  for (int i = 0; i < 200 && !idle; ++i) {
    idle = eng->progress().busy_for == 0ns;
    std::this_thread::sleep_for(5ms);
  }
  CHECK(idle);
  CHECK(eng->progress().n_steps >= before.n_steps + 3);  // a prefill and two decodes at least
  CHECK(eng->healthy());
}

TEST_CASE("engine: a lost device fails the request with device_lost; the engine turns unhealthy",
          "[engine][llm][ops]") {
  fixture fx;
  auto eng = fx.start();
  gpu::fault::arm_device_lost();
  auto c = std::make_shared<collector>();
  REQUIRE(eng->submit(fx.greedy("Once upon a time", 8), c).ok());
  REQUIRE(c->wait());
  CHECK(c->failed);
  CHECK(c->error.code == errc::device_lost);
  CHECK_FALSE(eng->healthy());
  auto again = eng->submit(fx.greedy("Once", 2), std::make_shared<collector>());
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == errc::device_lost);
}

TEST_CASE("engine: device sampling (argmax, top-k candidates) gives the tokens whole rows give", "[engine][llm]") {
  fixture fx;
  // Greedy, top_k, top_k + top_p, min_p + top_p, and whole-row cases (penalty, plain draw),
  // two seeds each, all in one batch; then the same with every row read back whole.
  std::vector<engine::request> reqs;
  for (uint64_t seed : {3u, 11u}) {
    auto base = fx.greedy("Once upon a time", 24);
    base.params.seed = seed;
    reqs.push_back(base);
    auto r = base;
    r.params.temperature = 0.9f;
    r.params.top_k = 8;
    reqs.push_back(r);
    r.params.top_p = 0.7f;
    reqs.push_back(r);
    r.params.top_k = 0;
    r.params.min_p = 0.1f;
    reqs.push_back(r);
    r.params.frequency_penalty = 0.5f;
    reqs.push_back(r);
    r = base;
    r.params.temperature = 1.0f;
    reqs.push_back(r);
  }
  auto run = [&](bool device) {
    engine::engine_options o;
    o.device_sampling = device;
    auto eng = fx.start(o);
    std::vector<std::shared_ptr<collector>> sinks;
    for (const auto& r : reqs) {
      sinks.push_back(std::make_shared<collector>());
      REQUIRE(eng->submit(r, sinks.back()).ok());
    }
    std::vector<std::vector<int32_t>> out;
    for (auto& s : sinks) {
      REQUIRE(s->wait());
      REQUIRE_FALSE(s->failed);
      out.push_back(s->tokens[0]);
    }
    return out;
  };
  const auto dev = run(true), whole = run(false);
  for (size_t i = 0; i < reqs.size(); ++i) {
    INFO("request " << i);
    CHECK(dev[i].size() == 24);
    CHECK(dev[i] == whole[i]);
  }
}

TEST_CASE("engine: overlapped recording (step N+1 recorded while N runs) gives the same tokens", "[engine][llm]") {
  // Sequences of different lengths (the batch's composition changes as they end), greedy
  // and sampled rows, with the runner recording each next decode step aside (Vulkan; the
  // reference backend runs ops at once and never parks) and without.
  std::vector<engine::request> reqs;
  auto run = [&](int overlap) {
    fixture fx(64, overlap);
    if (reqs.empty()) {
      for (int n : {6, 20, 13}) reqs.push_back(fx.greedy("Once upon a time", n));
      reqs[2].params.temperature = 0.9f;
      reqs[2].params.top_k = 8;
      reqs[2].params.seed = 5;
    }
    auto eng = fx.start();
    std::vector<std::shared_ptr<collector>> sinks;
    for (const auto& r : reqs) {
      sinks.push_back(std::make_shared<collector>());
      REQUIRE(eng->submit(r, sinks.back()).ok());
    }
    std::vector<std::vector<int32_t>> out;
    for (auto& s : sinks) {
      REQUIRE(s->wait());
      REQUIRE_FALSE(s->failed);
      out.push_back(s->tokens[0]);
    }
    return out;
  };
  const auto over = run(1), plain = run(0);
  for (size_t i = 0; i < reqs.size(); ++i) {
    INFO("request " << i);
    CHECK(over[i].size() == size_t(reqs[i].params.max_tokens));
    CHECK(over[i] == plain[i]);
  }
}

TEST_CASE("engine: an embedding is the runner's final-normed hidden rows pooled on the host", "[engine][llm][embed]") {
  fixture fx;
  const std::vector<std::string> texts = {"Once upon a time there was a little girl named Lily who",
                                          "The cat sat", "A dog ran to the park and saw a big red ball."};
  const std::vector<engine::pooling> kinds = {engine::pooling::mean, engine::pooling::cls, engine::pooling::last};
  std::vector<std::vector<float>> got;
  std::vector<std::vector<int32_t>> prompts;
  {
    engine::engine_options o;
    o.sched.max_num_batched_tokens = 8;  // chunked prefill: rows arrive over several steps
    auto eng = fx.start(o);
    std::vector<std::shared_ptr<collector>> cs;
    auto gen = std::make_shared<collector>();  // a generation sharing the steps
    REQUIRE(eng->submit(fx.greedy("Once upon a time", 12), gen).ok());
    for (size_t i = 0; i < texts.size(); ++i) {
      engine::request rq = fx.greedy(texts[i], 5);
      rq.embed = kinds[i];
      prompts.push_back(rq.prompt);
      cs.push_back(std::make_shared<collector>());
      REQUIRE(eng->submit(rq, cs.back()).ok());
    }
    REQUIRE(gen->wait());
    CHECK(gen->tokens[0].size() == 12);
    for (size_t i = 0; i < cs.size(); ++i) {
      REQUIRE(cs[i]->wait());
      REQUIRE_FALSE(cs[i]->failed);
      CHECK(cs[i]->tokens[0].empty());  // nothing sampled
      CHECK(cs[i]->embedded_prompt_tokens == static_cast<int>(prompts[i].size()));
      got.push_back(cs[i]->embedding);
    }
  }
  // The reference: each prompt alone in one forward_hidden over every row, pooled here.
  const int C = fx.runner->config().n_embd;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto n = static_cast<int32_t>(prompts[i].size());
    std::vector<int32_t> blocks;
    for (int32_t b = 0; b * 16 < n; ++b) blocks.push_back(b);
    model::batch b;
    b.block_tables.emplace_back(blocks);
    b.add_tokens(0, prompts[i], 0, false);
    for (int32_t t = 0; t < n; ++t) b.logit_rows.push_back(t);
    auto rows = fx.runner->forward_hidden(b);
    REQUIRE(rows.ok());
    REQUIRE(rows->size() == static_cast<size_t>(n) * static_cast<size_t>(C));
    engine::pooler p(kinds[i], C);
    for (int32_t t = 0; t < n; ++t)
      if (p.wants(t, n)) p.add(t, std::span<const float>(rows->data() + static_cast<size_t>(t) * C, static_cast<size_t>(C)));
    const auto want = p.result();
    REQUIRE(got[i].size() == want.size());
    for (size_t k = 0; k < want.size(); ++k) CHECK(got[i][k] == Approx(want[k]).margin(1e-4));
  }
  CHECK(got[0] != got[1]);
}

TEST_CASE("engine: an embedding request is deterministic and the same whether its prefix was cached", "[engine][llm][embed]") {
  fixture fx;
  auto eng = fx.start();
  std::vector<float> first;
  for (int k = 0; k < 2; ++k) {
    engine::request rq = fx.greedy("The cat sat on the mat", 0);
    rq.embed = engine::pooling::last;
    auto c = std::make_shared<collector>();
    REQUIRE(eng->submit(rq, c).ok());
    REQUIRE(c->wait());
    REQUIRE_FALSE(c->failed);
    REQUIRE(c->embedding.size() == static_cast<size_t>(fx.runner->config().n_embd));
    if (k == 0) first = c->embedding;
    else CHECK(c->embedding == first);  // the second may come from the prefix cache
  }
}

TEST_CASE("engine: a session's pinned conversation survives other traffic; released, it is evicted",
          "[engine][llm][sessions]") {
  // 20 blocks of 16 tokens; other traffic of 4 x ~120 tokens cycles through every free block.
  fixture fx(20);
  auto eng = fx.start({.max_pinned_blocks = 8});
  const std::string prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  auto run = [&](engine::request rq) {
    auto sink = std::make_shared<collector>();
    REQUIRE(eng->submit(std::move(rq), sink).ok());
    REQUIRE(sink->wait());
    REQUIRE_FALSE(sink->failed);
    return sink;
  };
  auto traffic = [&] {
    for (const char* p : {"The cat sat", "A big dog ran", "Tom had a red ball", "The sun was hot"}) {
      auto rq = fx.greedy(p, 110);
      rq.params.ignore_eos = true;
      run(rq);
    }
  };
  auto turn1 = fx.greedy(prompt, 30);
  turn1.params.ignore_eos = true;
  turn1.session = 77;
  auto first = run(turn1);
  // The follow-up: the conversation so far (prompt + reply) and more.
  auto next = fx.greedy(prompt, 4);
  for (auto t : first->tokens[0]) next.prompt.push_back(t);
  for (auto t : fx.tok->encode(" Then", false)) next.prompt.push_back(t);
  next.session = 77;
  const int B = fx.runner->kv().block_size();
  const int conv = static_cast<int>(turn1.prompt.size() + first->tokens[0].size()) - 1;  // computed tokens
  REQUIRE(conv / B >= 3);
  for (int i = 0; i < 200 && eng->n_pinned_blocks() == 0; ++i) std::this_thread::sleep_for(1ms);
  CHECK(eng->n_pinned_blocks() == conv / B);
  traffic();
  auto second = run(next);
  CHECK(second->finished.at(0).seq_usage.n_cached_tokens >= conv / B * B);

  // A request outside the session is not pinned: the same traffic evicts it.
  auto other = fx.greedy("Lily and Tom went to the park to play with a ball and a kite.", 30);
  other.params.ignore_eos = true;
  run(other);
  traffic();
  CHECK(run(other)->finished.at(0).seq_usage.n_cached_tokens == 0);

  // Released, the session's blocks are evicted like any others.
  eng->release_session(77);
  for (int i = 0; i < 2000 && eng->n_pinned_blocks() != 0; ++i) std::this_thread::sleep_for(1ms);
  CHECK(eng->n_pinned_blocks() == 0);
  traffic();
  CHECK(run(next)->finished.at(0).seq_usage.n_cached_tokens == 0);
}

TEST_CASE("engine: a request that cannot fit beside the pins drops them instead of failing",
          "[engine][llm][sessions]") {
  fixture fx(20);  // n_ctx 256 = 16 blocks
  auto eng = fx.start({.max_pinned_blocks = 12});
  auto rq = fx.greedy("Once upon a time", 180);
  rq.params.ignore_eos = true;
  rq.session = 5;
  auto s1 = std::make_shared<collector>();
  REQUIRE(eng->submit(rq, s1).ok());
  REQUIRE(s1->wait());
  for (int i = 0; i < 200 && eng->n_pinned_blocks() == 0; ++i) std::this_thread::sleep_for(1ms);
  REQUIRE(eng->n_pinned_blocks() >= 10);
  auto big = fx.greedy("The cat", 250);  // the whole context: 16 blocks, more than are free
  big.params.ignore_eos = true;
  auto s2 = std::make_shared<collector>();
  REQUIRE(eng->submit(big, s2).ok());
  REQUIRE(s2->wait());
  CHECK_FALSE(s2->failed);
  CHECK(eng->n_pinned_blocks() == 0);
}

TEST_CASE("engine: on_scheduled is called once, before the request's first event", "[engine][llm][ops]") {
  struct order_sink : collector {
    order_sink() : collector(2) {}
    std::atomic<int> n_scheduled{0};
    std::atomic<bool> events_before{false};
    void on_scheduled() noexcept override {
      if (n_tokens() > 0) events_before = true;
      ++n_scheduled;
    }
  };
  fixture fx;
  auto eng = fx.start();
  auto rq = fx.greedy("Once upon a time", 6);
  rq.params.n = 2;
  auto sink = std::make_shared<order_sink>();
  REQUIRE(eng->submit(rq, sink).ok());
  REQUIRE(sink->wait());
  CHECK(sink->n_scheduled.load() == 1);
  CHECK_FALSE(sink->events_before.load());
}

// ---- hybrid recurrent models (#23): qwen35's state slots under the engine -------------------
namespace {

// tiny-qwen35 (make-test-model's generator) with its synthetic vocabulary, on the test's backend.
struct hybrid_fixture {
  std::unique_ptr<gpu::backend> be = test_backend();
  std::string path = (std::filesystem::temp_directory_path() / ("vks-hybrid-" + std::to_string(::getpid()) + ".gguf")).string();
  model::model_file file;
  std::unique_ptr<model::runner> runner;
  std::unique_ptr<text::tokenizer> tok;

  explicit hybrid_fixture(int kv_blocks = 64, int checkpoints = 0) {
    auto spec = model::test_model_shape("tiny-qwen35");
    REQUIRE(spec.ok());
    REQUIRE(model::write_test_gguf(*spec, path).ok());
    auto f = model::model_file::open(path);
    REQUIRE(f.ok());
    file = std::move(*f);
    model::runner_options ro;
    ro.max_context = 256;
    ro.kv_blocks = kv_blocks;
    ro.max_seqs = 8;
    ro.state_checkpoints = checkpoints;
    auto r = model::runner::load(file, *be, ro);
    REQUIRE(r.ok());
    runner = std::move(*r);
    auto t = text::tokenizer::from_gguf(*file.gguf());
    REQUIRE(t.ok());
    tok = std::move(*t);
  }
  ~hybrid_fixture() { std::filesystem::remove(path); }
  engine::request greedy(int seed, int n_prompt, int max_tokens) const {
    engine::request rq;
    uint32_t s = static_cast<uint32_t>(seed);
    for (int i = 0; i < n_prompt; ++i) {
      s = s * 1664525u + 1013904223u;
      rq.prompt.push_back(static_cast<int32_t>(3 + (s >> 8) % 500));
    }
    rq.params.temperature = 0;
    rq.params.max_tokens = max_tokens;
    rq.params.ignore_eos = true;
    return rq;
  }
};

std::vector<std::vector<int32_t>> run_alone(hybrid_fixture& fx, const std::vector<engine::request>& rqs) {
  auto e = engine::llm_engine::start(*fx.runner, *fx.tok, {.sched = {.max_num_batched_tokens = 256, .max_num_seqs = 8}});
  REQUIRE(e.ok());
  std::vector<std::vector<int32_t>> out;
  for (const auto& rq : rqs) {
    auto sink = std::make_shared<collector>();
    REQUIRE((*e)->submit(rq, sink).ok());
    REQUIRE(sink->wait());
    REQUIRE_FALSE(sink->failed);
    out.push_back(sink->tokens[0]);
  }
  return out;
}

}  // namespace

TEST_CASE("engine: qwen35 sequences batched, chunked and preempted equal each run alone", "[engine][llm][hybrid]") {
  hybrid_fixture fx(9);  // 9 blocks of 16: four sequences of 31-57 tokens cannot all be resident
  const std::vector<engine::request> rqs = {fx.greedy(1, 20, 24), fx.greedy(2, 7, 24), fx.greedy(3, 33, 24),
                                            fx.greedy(4, 12, 24)};
  const auto alone = run_alone(fx, rqs);
  CHECK(fx.runner->states().n_free() == fx.runner->states().n_slots());
  auto e = engine::llm_engine::start(*fx.runner, *fx.tok, {.sched = {.max_num_batched_tokens = 16, .max_num_seqs = 8}});
  REQUIRE(e.ok());
  std::vector<std::shared_ptr<collector>> sinks;
  for (const auto& rq : rqs) {
    sinks.push_back(std::make_shared<collector>());
    REQUIRE((*e)->submit(rq, sinks.back()).ok());
  }
  for (size_t i = 0; i < rqs.size(); ++i) {
    REQUIRE(sinks[i]->wait());
    REQUIRE_FALSE(sinks[i]->failed);
    CHECK(sinks[i]->tokens[0] == alone[i]);
    CHECK(sinks[i]->finished.at(0).seq_usage.n_cached_tokens == 0);
  }
  const auto& m = (*e)->metrics();
  CHECK(m.preemptions.load() > 0);
  // Each preempted sequence was saved to host memory and resumed from its copy (#23).
  CHECK(m.state_saves.load() == m.preemptions.load());
  CHECK(m.state_restores.load() == m.state_saves.load());
  CHECK(m.recomputed_tokens.load() == 0);
  for (int i = 0; i < 2000 && fx.runner->states().n_free() != fx.runner->states().n_slots(); ++i)
    std::this_thread::sleep_for(1ms);
  CHECK(fx.runner->states().n_free() == fx.runner->states().n_slots());
}

TEST_CASE("engine: qwen35 n = 3 choices keep their own states, batched, chunked and preempted", "[engine][llm][hybrid]") {
  // Each sibling updates its own state slot from the shared prompt: greedy choices all equal
  // the n = 1 reply, also when a second request and a small KV pool make the engine chunk
  // prefills and preempt (siblings forked from the prompt; a preempted one saved and resumed).
  hybrid_fixture fx(9);
  engine::request three = fx.greedy(8, 29, 24);
  const engine::request other = fx.greedy(9, 35, 24);
  const auto alone = run_alone(fx, {three, other});
  three.params.n = 3;
  auto e = engine::llm_engine::start(*fx.runner, *fx.tok, {.sched = {.max_num_batched_tokens = 16, .max_num_seqs = 8}});
  REQUIRE(e.ok());
  auto s3 = std::make_shared<collector>(3), s1 = std::make_shared<collector>();
  REQUIRE((*e)->submit(three, s3).ok());
  REQUIRE((*e)->submit(other, s1).ok());
  REQUIRE(s3->wait());
  REQUIRE(s1->wait());
  REQUIRE_FALSE(s3->failed);
  REQUIRE_FALSE(s1->failed);
  REQUIRE(s3->tokens.size() == 3);
  for (const auto& t : s3->tokens) CHECK(t == alone[0]);
  CHECK(s1->tokens[0] == alone[1]);
  CHECK((*e)->metrics().preemptions.load() > 0);
  for (int i = 0; i < 2000 && fx.runner->states().n_free() != fx.runner->states().n_slots(); ++i)
    std::this_thread::sleep_for(1ms);
  CHECK(fx.runner->states().n_free() == fx.runner->states().n_slots());
}

TEST_CASE("engine: qwen35 repeats a prompt without the prefix cache and refuses too few state slots",
          "[engine][llm][hybrid]") {
  hybrid_fixture fx;
  const auto rq = fx.greedy(5, 40, 20);
  const auto a = run_alone(fx, {rq, rq});
  CHECK(a[0] == a[1]);
  auto e = engine::llm_engine::start(*fx.runner, *fx.tok, {.sched = {.max_num_batched_tokens = 64, .max_num_seqs = 9}});
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().message.find("state slots") != std::string::npos);
}

TEST_CASE("engine: a qwen35 follow-up turn resumes from a state checkpoint with the same output",
          "[engine][llm][hybrid]") {
  // Turn 2's prompt is turn 1's prompt and reply and a few more tokens: with checkpoints its
  // cached prefix (whole blocks, ending where a checkpoint was taken) is skipped, and the
  // reply equals the one computed from scratch by an engine without checkpoints.
  hybrid_fixture plain;
  hybrid_fixture ck(64, 4);
  auto turn1 = ck.greedy(7, 37, 30);
  std::vector<int32_t> reply;
  {
    auto e = engine::llm_engine::start(*ck.runner, *ck.tok, {.sched = {.max_num_batched_tokens = 256, .max_num_seqs = 8}});
    REQUIRE(e.ok());
    auto sink = std::make_shared<collector>();
    REQUIRE((*e)->submit(turn1, sink).ok());
    REQUIRE(sink->wait());
    reply = sink->tokens[0];
    CHECK(sink->finished.at(0).seq_usage.n_cached_tokens == 0);
    auto turn2 = turn1;
    turn2.prompt.insert(turn2.prompt.end(), reply.begin(), reply.end());
    for (int i = 0; i < 9; ++i) turn2.prompt.push_back(100 + i);
    auto sink2 = std::make_shared<collector>();
    REQUIRE((*e)->submit(turn2, sink2).ok());
    REQUIRE(sink2->wait());
    REQUIRE_FALSE(sink2->failed);
    // turn 1 computed 37 + 29 = 66 positions: checkpoints at 32 (prefill) and 48, 64 (decode)
    CHECK(sink2->finished.at(0).seq_usage.n_cached_tokens == 64);
    const auto want = run_alone(plain, {turn2});
    CHECK(sink2->tokens[0] == want[0]);
  }
}

// n > 1 choices of a hybrid are forked from one computed prompt (#23): the first choice's
// prompt runs once, each sibling samples its first token from the same logits row and gets a
// copy of the state (and of the block where the prompt ends); every choice equals an
// independent request with its seed (seed + i), sampled at temperature 0.9.
TEST_CASE("engine: qwen35 n = 2..4 choices share one prefill and equal independent requests",
          "[engine][llm][hybrid]") {
  hybrid_fixture fx;
  struct shape { int n, n_prompt, chunk; };
  // A prompt ending inside a block and one ending on a boundary; whole and chunked prefill.
  for (const shape sh : {shape{2, 29, 256}, shape{4, 32, 256}, shape{3, 37, 16}}) {
    CAPTURE(sh.n, sh.n_prompt, sh.chunk);
    engine::request rq = fx.greedy(20 + sh.n_prompt, sh.n_prompt, 8);
    rq.params.temperature = 0.9f;
    rq.params.seed = 1234;
    std::vector<std::vector<int32_t>> want;
    for (int i = 0; i < sh.n; ++i) {
      engine::request one = rq;
      one.params.seed = 1234 + i;
      want.push_back(run_alone(fx, {one})[0]);
    }
    auto e = engine::llm_engine::start(*fx.runner, *fx.tok,
                                       {.sched = {.max_num_batched_tokens = sh.chunk, .max_num_seqs = 8}});
    REQUIRE(e.ok());
    rq.params.n = sh.n;
    auto sink = std::make_shared<collector>(sh.n);
    REQUIRE((*e)->submit(rq, sink).ok());
    REQUIRE(sink->wait());
    REQUIRE_FALSE(sink->failed);
    for (int i = 0; i < sh.n; ++i) CHECK(sink->tokens[static_cast<size_t>(i)] == want[static_cast<size_t>(i)]);
    CHECK((*e)->metrics().prompt_tokens_computed.load() == static_cast<uint64_t>(sh.n_prompt));
    CHECK((*e)->metrics().forked_seqs.load() == static_cast<uint64_t>(sh.n - 1));
    e->reset();
    CHECK(fx.runner->states().n_free() == fx.runner->states().n_slots());
  }
}

// A preempted hybrid sequence is saved to host memory (state slot and KV rows) and resumes
// where it stopped (#23; checked above with the default budget); with no host budget it is
// recomputed (the fallback) and still gives the same tokens; with room for about one copy the
// oldest copy is dropped when another is saved, and that sequence is recomputed. Every state
// slot is given back.
TEST_CASE("engine: a preempted qwen35 sequence falls back to recomputing when its saved state is dropped",
          "[engine][llm][hybrid]") {
  hybrid_fixture fx(9);  // 9 blocks of 16: the six sequences cannot all be resident
  const std::vector<engine::request> rqs = {fx.greedy(1, 20, 16), fx.greedy(2, 7, 16), fx.greedy(3, 33, 16),
                                            fx.greedy(4, 12, 16), fx.greedy(5, 25, 16), fx.greedy(6, 15, 16)};
  const auto alone = run_alone(fx, rqs);
  const auto slot = static_cast<std::int64_t>(model::state_cache::slot_bytes(fx.runner->config()));
  // The default budget (every copy kept) is checked by "sequences batched, chunked and
  // preempted" above; here none, and room for about one copy.
  for (const std::int64_t budget : {std::int64_t{0}, slot + 3 * 16 * 1024}) {
    CAPTURE(budget);
    engine::engine_options eo{.sched = {.max_num_batched_tokens = 16, .max_num_seqs = 8}};
    eo.max_saved_state_bytes = budget;
    auto e = engine::llm_engine::start(*fx.runner, *fx.tok, eo);
    REQUIRE(e.ok());
    std::vector<std::shared_ptr<collector>> sinks;
    for (const auto& rq : rqs) {
      sinks.push_back(std::make_shared<collector>());
      REQUIRE((*e)->submit(rq, sinks.back()).ok());
    }
    for (size_t i = 0; i < rqs.size(); ++i) {
      REQUIRE(sinks[i]->wait());
      REQUIRE_FALSE(sinks[i]->failed);
      CHECK(sinks[i]->tokens[0] == alone[i]);
    }
    const auto& m = (*e)->metrics();
    CHECK(m.preemptions.load() > 0);
    if (budget == 0) {
      CHECK(m.state_saves.load() == 0);
      CHECK(m.recomputed_tokens.load() > 0);
    }
    // Each preemption resumes from its copy or is recomputed (the copy refused or dropped).
    CHECK(m.state_restores.load() <= m.state_saves.load());
    CHECK((m.recomputed_tokens.load() > 0) == (m.state_restores.load() < m.preemptions.load()));
    e->reset();
    CHECK(fx.runner->states().n_free() == fx.runner->states().n_slots());
  }
}

// #22: a gemma3-shaped model (5 sliding-window layers of 6) generating past several windows
// gives the same tokens whether its window layers keep every position in the main pool or
// their own pool whose out-of-window blocks are released; the window pool stays bounded, and
// a repeated prompt (a prefix-cache hit through both pools) gives the same tokens again. The
// same for tiny-gemma4-wide: pools whose layers have rows of different widths (sliding heads
// of 32 x 2, global 64 x 1) and KV-shared layers (4, 5) that own no cache.
TEST_CASE("engine: sliding-window KV freeing leaves a gemma3 model's tokens unchanged", "[engine][llm][window]") {
  const char* shape = GENERATE("tiny-gemma3", "tiny-gemma4-wide");
  INFO(shape);
  auto file = window_model_file(shape);
  auto tok = text::tokenizer::from_gguf(*file->gguf());
  REQUIRE(tok.ok());
  auto be = test_backend();
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(300 + (i * 37) % 200);
  auto run = [&](int window_blocks, int n_requests, int* peak) {
    model::runner_options ro;
    ro.max_context = 160;
    ro.kv_blocks = 24;
    ro.kv_window_blocks = window_blocks;
    auto r = model::runner::load(*file, *be, ro);
    REQUIRE(r.ok());
    engine::engine_options eo;
    eo.sched.max_num_batched_tokens = 16;  // chunked prefill: the window moves inside the prompt
    auto e = engine::llm_engine::start(**r, **tok, eo);
    REQUIRE(e.ok());
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < n_requests; ++i) {
      engine::request rq;
      rq.prompt = prompt;
      rq.params.temperature = 0;
      rq.params.max_tokens = 90;
      rq.params.ignore_eos = true;
      auto sink = std::make_shared<collector>();
      REQUIRE((*e)->submit(std::move(rq), sink).ok());
      REQUIRE(sink->wait());
      REQUIRE_FALSE(sink->failed);
      out.push_back(sink->tokens[0]);
    }
    if (peak) *peak = (*e)->peak_window_blocks();
    return out;
  };
  const auto whole = run(0, 1, nullptr);
  int peak = 0;
  const auto freed = run(8, 2, &peak);
  REQUIRE(whole[0].size() == 90);
  CHECK(freed[0] == whole[0]);
  CHECK(freed[1] == whole[0]);
  // 130 positions are 9 blocks; the window (19 keys behind a chunk of 16) spans at most 3.
  CHECK(peak > 0);
  CHECK(peak <= 3);
}

TEST_CASE("runner: a window table must hold every block a token's window reaches", "[engine][llm][window][hostile]") {
  auto file = window_model_file();
  REQUIRE(file.ok());
  auto be = test_backend();
  model::runner_options ro;
  ro.max_context = 64;
  ro.kv_blocks = 8;
  ro.kv_window_blocks = 4;
  auto r = model::runner::load(*file, *be, ro);
  REQUIRE(r.ok());
  CHECK((*r)->kv().n_window_blocks() == 4);
  CHECK((*r)->kv().in_window_pool(0));
  CHECK_FALSE((*r)->kv().in_window_pool(5));
  const std::vector<int32_t> table = {0, 1, 2}, released = {-1, 1, 2}, window_ok = {-1, 0, 1};
  const std::vector<int32_t> ids = {5};
  auto at = [&](int pos, const std::vector<int32_t>& wt, bool with_window) {
    model::batch b;
    b.block_tables.emplace_back(table);
    if (with_window) b.window_tables.emplace_back(wt);
    b.add_tokens(0, ids, pos, true);
    return (*r)->forward(b);
  };
  CHECK(at(40, window_ok, true).ok());        // keys 21..40: blocks 1 and 2
  auto bad = at(35, released, true);          // keys 16..35: block 1 and 2, fine
  CHECK(bad.ok());
  bad = at(20, released, true);               // keys 1..20 reach block 0, released
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == errc::invalid_argument);
  CHECK(bad.error().message.find("released") != std::string::npos);
  bad = at(40, window_ok, false);             // no window table at all
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == errc::invalid_argument);
  bad = at(40, {-1, 0, 9}, true);             // beyond the window pool
  REQUIRE_FALSE(bad.ok());
}
