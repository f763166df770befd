// bench-engine: continuous batching measured at the engine interface (no HTTP), the
// figures behind the batching issue: aggregate output tokens/s, TTFT and ITL percentiles
// at several concurrencies with mixed prompt lengths, and TTFT of prompts sharing a long
// prefix with the prefix cache on versus off. Prompts are slices of a text file
// (war-and-peace.txt) tokenized with the model's tokenizer. Prints a Markdown table.
// Usage: bench-engine --model M [--backend vk|ref] [--concurrency 1,4,16,32]
//                     [--text FILE] [--max-tokens 64] [--prefix 512]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/llm_engine.hpp"
#include "gpu/backend.hpp"
#include "model/model_file.hpp"
#include "model/runner.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace vks;
using clock_type = std::chrono::steady_clock;

namespace {

// Timestamps of one request's tokens (engine thread writes, main thread reads after done).
struct timing_sink final : engine::event_sink {
  std::mutex mu;
  std::condition_variable cv;
  clock_type::time_point submitted = clock_type::now();
  std::vector<clock_type::time_point> token_times;
  bool done = false, failed = false;
  void on_event(engine::event ev) noexcept override {
    std::lock_guard lk(mu);
    const auto now = clock_type::now();
    if (auto* t = std::get_if<engine::token_event>(&ev)) {
      for (size_t i = 0; i < t->tokens.size(); ++i) token_times.push_back(now);
    } else if (std::get_if<engine::finished_event>(&ev)) {
      done = true;
    } else {
      failed = done = true;
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return done; });
  }
};

double ms(clock_type::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct wave_result {
  double tok_per_s = 0, ttft_p50 = 0, ttft_p99 = 0, itl_p50 = 0, itl_p99 = 0;
  int n_failed = 0;
};

engine::request make_request(std::vector<int32_t> prompt, int max_tokens) {
  engine::request rq;
  rq.prompt = std::move(prompt);
  rq.params.temperature = 0;
  rq.params.max_tokens = max_tokens;
  rq.params.ignore_eos = true;
  return rq;
}

// Submits all prompts at once and waits for every one.
wave_result run_wave(engine::engine& eng, const std::vector<std::vector<int32_t>>& prompts, int max_tokens) {
  std::vector<std::shared_ptr<timing_sink>> sinks;
  const auto t0 = clock_type::now();
  for (const auto& p : prompts) {
    auto s = std::make_shared<timing_sink>();
    auto h = eng.submit(make_request(p, max_tokens), s);
    if (!h) {
      std::fprintf(stderr, "submit: %s\n", h.error().message.c_str());
      s->failed = s->done = true;
    }
    sinks.push_back(std::move(s));
  }
  std::vector<double> ttft, itl;
  size_t n_tokens = 0;
  wave_result w;
  for (auto& s : sinks) {
    s->wait();
    if (s->failed) ++w.n_failed;
    if (s->token_times.empty()) continue;
    ttft.push_back(ms(s->token_times.front() - s->submitted));
    for (size_t i = 1; i < s->token_times.size(); ++i) itl.push_back(ms(s->token_times[i] - s->token_times[i - 1]));
    n_tokens += s->token_times.size();
  }
  const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
  w.tok_per_s = static_cast<double>(n_tokens) / secs;
  w.ttft_p50 = percentile(ttft, 0.5);
  w.ttft_p99 = percentile(ttft, 0.99);
  w.itl_p50 = percentile(itl, 0.5);
  w.itl_p99 = percentile(itl, 0.99);
  return w;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"continuous-batching benchmark at the engine interface"};
  std::string model_path, backend = "vk", text_path, conc = "1,4,16,32";
  int max_tokens = 64, prefix = 512, max_num_seqs = 32, max_batched = 512;
  app.add_option("--model", model_path, "model file or directory")->required();
  app.add_option("--backend", backend, "vk | ref")->capture_default_str();
  app.add_option("--text", text_path, "prompt source text (default: $VKS_SHARED/models/corpora/war-and-peace.txt)");
  app.add_option("--concurrency", conc, "comma-separated concurrency levels")->capture_default_str();
  app.add_option("--max-tokens", max_tokens, "output tokens per request")->capture_default_str();
  app.add_option("--prefix", prefix, "shared prefix tokens for the prefix-cache test (0 = skip)")->capture_default_str();
  app.add_option("--max-num-seqs", max_num_seqs, "engine sequence cap")->capture_default_str();
  app.add_option("--max-num-batched-tokens", max_batched, "engine token budget per step")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (text_path.empty()) {
    const char* sh = std::getenv("VKS_SHARED");
    text_path = std::string(sh ? sh : "../shared") + "/models/corpora/war-and-peace.txt";
  }
  std::ifstream in(text_path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string corpus = ss.str();
  if (corpus.size() < 100000) {
    std::fprintf(stderr, "bench-engine: %s is missing or too short\n", text_path.c_str());
    return 1;
  }

  auto file = model::model_file::open(model_path);
  if (!file) return std::fprintf(stderr, "bench-engine: %s\n", file.error().message.c_str()), 1;
  auto tok = file->gguf() ? text::tokenizer::from_gguf(*file->gguf()) : text::tokenizer::from_hf_dir(model_path);
  if (!tok) return std::fprintf(stderr, "bench-engine: %s\n", tok.error().message.c_str()), 1;
  std::unique_ptr<gpu::backend> be;
  if (backend == "ref") {
    be = gpu::make_ref_backend();
  } else {
    auto v = gpu::make_vk_backend({});
    if (!v) return std::fprintf(stderr, "bench-engine: %s\n", v.error().message.c_str()), 1;
    be = std::move(*v);
  }
  const int max_context = std::max(prefix + 64, 256) + max_tokens;
  model::runner_options ro;
  ro.max_context = max_context;
  ro.max_seqs = max_num_seqs;
  ro.max_batch_tokens = max_batched;
  ro.max_logit_rows = max_num_seqs;
  ro.kv_blocks = (max_context / 16 + 1) * max_num_seqs + 1;
  auto runner = model::runner::load(*file, *be, ro);
  if (!runner) return std::fprintf(stderr, "bench-engine: %s\n", runner.error().message.c_str()), 1;

  // Mixed prompt lengths: 16..256 tokens from random places in the corpus.
  std::mt19937 rng(42);
  auto slice_tokens = [&](int n_tokens) {
    std::uniform_int_distribution<size_t> at(0, corpus.size() - 20000);
    auto ids = (*tok)->encode(std::string_view(corpus).substr(at(rng), 16 * static_cast<size_t>(n_tokens)), true);
    if (ids.size() > static_cast<size_t>(n_tokens)) ids.resize(static_cast<size_t>(n_tokens));
    return ids;
  };
  std::printf("model: %s, backend: %s (%s)\n\n", model_path.c_str(), be->info().name.c_str(), backend.c_str());
  std::printf("| concurrency | output tok/s | vs 1 stream | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  engine::engine_options eo;
  eo.sched.max_num_seqs = max_num_seqs;
  eo.sched.max_num_batched_tokens = max_batched;
  double one_stream = 0;
  {
    auto eng = engine::llm_engine::start(**runner, **tok, eo);
    if (!eng) return std::fprintf(stderr, "bench-engine: %s\n", eng.error().message.c_str()), 1;
    run_wave(**eng, {slice_tokens(32)}, 8);  // warm-up: pipelines, caches
    std::uniform_int_distribution<int> len(16, 256);
    for (int c : parse_list(conc)) {
      std::vector<std::vector<int32_t>> prompts;
      for (int i = 0; i < c; ++i) prompts.push_back(slice_tokens(len(rng)));
      auto w = run_wave(**eng, prompts, max_tokens);
      if (one_stream == 0) one_stream = w.tok_per_s;
      std::printf("| %d | %.1f | %.2fx | %.0f | %.0f | %.1f | %.1f |%s\n", c, w.tok_per_s, w.tok_per_s / one_stream,
                  w.ttft_p50, w.ttft_p99, w.itl_p50, w.itl_p99, w.n_failed ? " (failures!)" : "");
      std::fflush(stdout);
    }
  }
  if (prefix > 0) {
    // Same 512-token prefix + a distinct 16-token tail; sequential single requests.
    const auto shared = slice_tokens(prefix);
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < 4; ++i) {
      auto p = shared;
      auto tail = slice_tokens(17);
      p.insert(p.end(), tail.begin() + 1, tail.end());  // drop the tail's BOS
      prompts.push_back(std::move(p));
    }
    auto ttft_of = [&](bool caching) {
      auto o = eo;
      o.enable_prefix_caching = caching;
      auto eng = engine::llm_engine::start(**runner, **tok, o);
      run_wave(**eng, {prompts[0]}, 1);  // warm (and, with caching, fills the cache)
      std::vector<double> t;
      for (size_t i = 1; i < prompts.size(); ++i) t.push_back(run_wave(**eng, {prompts[i]}, 1).ttft_p50);
      return percentile(t, 0.5);
    };
    const double off = ttft_of(false), on = ttft_of(true);
    std::printf("\nshared %zu-token prefix: TTFT uncached %.0f ms, cached %.0f ms, ratio %.2f\n", shared.size(), off, on,
                on / off);
  }
  return 0;
}
