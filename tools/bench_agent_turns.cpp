// bench-agent-turns: the agent-loop latency of a hybrid recurrent model (#23): a conversation
// of N turns where each turn's prompt is the last turn's prompt, its reply and a new user
// message, run at the engine interface; TTFT of every turn with recurrent-state checkpoints
// (prefix caching resumes from the last one) and without (every prompt computed whole).
// Prompts are random token ids (the model is a make-test-model file). Prints a Markdown table.
// Usage: bench-agent-turns --model M [--backend vk|ref] [--turns 10] [--first 200]
//                          [--message 64] [--reply 32] [--checkpoints 4]
#include <CLI/CLI.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
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

struct sink final : engine::event_sink {
  std::mutex mu;
  std::condition_variable cv;
  clock_type::time_point submitted = clock_type::now(), first{};
  std::vector<int32_t> tokens;
  int cached = 0;
  bool done = false, failed = false;
  void on_event(engine::event ev) noexcept override {
    std::lock_guard lk(mu);
    if (auto* t = std::get_if<engine::token_event>(&ev)) {
      if (tokens.empty()) first = clock_type::now();
      tokens.insert(tokens.end(), t->tokens.begin(), t->tokens.end());
    } else if (auto* f = std::get_if<engine::finished_event>(&ev)) {
      cached = f->seq_usage.n_cached_tokens;
      done = true;
    } else if (!std::get_if<engine::prompt_logprobs_event>(&ev)) {
      failed = done = true;
    }
    cv.notify_all();
  }
};

struct turn_result {
  double ttft_ms = 0;
  int prompt = 0, cached = 0;
};

// The conversation on a fresh runner with `checkpoints` checkpoint columns.
std::vector<turn_result> conversation(const model::model_file& file, gpu::backend& be, const text::tokenizer& tok,
                                      int checkpoints, int turns, int first, int message, int reply, int ctx) {
  model::runner_options ro;
  ro.max_context = ctx;
  ro.max_seqs = 4;
  ro.max_batch_tokens = 512;
  ro.kv_blocks = 2 * ((ctx + 15) / 16);
  ro.state_checkpoints = checkpoints;
  auto r = model::runner::load(file, be, ro);
  if (!r) throw std::runtime_error(r.error().message);
  auto e = engine::llm_engine::start(**r, tok, {.sched = {.max_num_batched_tokens = 512, .max_num_seqs = 4}});
  if (!e) throw std::runtime_error(e.error().message);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int32_t> id(3, static_cast<int32_t>((*r)->config().n_vocab) - 1);
  std::vector<int32_t> prompt;
  std::vector<turn_result> out;
  for (int t = 0; t < turns; ++t) {
    for (int i = 0; i < (t == 0 ? first : message); ++i) prompt.push_back(id(rng));
    engine::request rq;
    rq.prompt = prompt;
    rq.params.temperature = 0;
    rq.params.max_tokens = reply;
    rq.params.ignore_eos = true;
    auto s = std::make_shared<sink>();
    s->submitted = clock_type::now();
    if (auto h = (*e)->submit(rq, s); !h) throw std::runtime_error(h.error().message);
    std::unique_lock lk(s->mu);
    s->cv.wait(lk, [&] { return s->done; });
    if (s->failed) throw std::runtime_error("turn failed");
    out.push_back({std::chrono::duration<double, std::milli>(s->first - s->submitted).count(),
                   static_cast<int>(prompt.size()), s->cached});
    prompt.insert(prompt.end(), s->tokens.begin(), s->tokens.end());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench-agent-turns: agent-loop TTFT of a hybrid model with and without state checkpoints"};
  std::string model, backend = "vk";
  int turns = 10, first = 200, message = 64, reply = 32, checkpoints = 4;
  app.add_option("--model", model, "a hybrid (qwen35) .gguf")->required();
  app.add_option("--backend", backend, "vk or ref");
  app.add_option("--turns", turns);
  app.add_option("--first", first, "tokens of the first prompt");
  app.add_option("--message", message, "tokens each later turn adds after the reply");
  app.add_option("--reply", reply, "tokens generated per turn");
  app.add_option("--checkpoints", checkpoints, "checkpoint columns of the checkpointed run");
  CLI11_PARSE(app, argc, argv);
  auto file = model::model_file::open(model);
  if (!file) { std::fprintf(stderr, "%s\n", file.error().message.c_str()); return 1; }
  auto tok = text::tokenizer::from_gguf(*file->gguf());
  if (!tok) { std::fprintf(stderr, "%s\n", tok.error().message.c_str()); return 1; }
  std::unique_ptr<gpu::backend> be;
  if (backend == "ref") be = gpu::make_ref_backend();
  else if (auto v = gpu::make_vk_backend({}); v) be = std::move(*v);
  else { std::fprintf(stderr, "%s\n", v.error().message.c_str()); return 1; }
  const int ctx = first + turns * (message + reply) + 64;
  try {
    (void)conversation(*file, *be, **tok, checkpoints, 1, 16, 0, 2, ctx);  // warm-up: compiles the pipelines
    const auto with = conversation(*file, *be, **tok, checkpoints, turns, first, message, reply, ctx);
    const auto without = conversation(*file, *be, **tok, 0, turns, first, message, reply, ctx);
    std::printf("| turn | prompt tokens | cached (checkpoints) | TTFT with checkpoints (ms) | TTFT without (ms) | ratio |\n");
    std::printf("|---|---|---|---|---|---|\n");
    for (int t = 0; t < turns; ++t)
      std::printf("| %d | %d | %d | %.1f | %.1f | %.3f |\n", t + 1, with[t].prompt, with[t].cached, with[t].ttft_ms,
                  without[t].ttft_ms, with[t].ttft_ms / without[t].ttft_ms);
  } catch (const std::exception& x) {
    std::fprintf(stderr, "bench-agent-turns: %s\n", x.what());
    return 1;
  }
  return 0;
}
