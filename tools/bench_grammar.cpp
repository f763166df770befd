// bench-grammar: the CPU cost structured output adds per generated token: for each token
// of a conforming JSON document (encoded with a real tokenizer), the time to compute the
// token mask for the matcher's state (vocab_index::allowed, uncached) and through a
// per-sequence mask_cache as the engine uses it, then feed the token. The peer figure in
// the same run is the plain vocabulary walk every sampler already does (finding the
// argmax of a logits row of the same size), so the ratio says how much heavier the mask
// is than the cheapest per-token CPU work. Prints one JSON line:
//   {"tokenizer","n_vocab","tokens","uncached_ms_mean","uncached_ms_max","cached_ms_mean",
//    "cache_hit_rate","argmax_ms_mean"}
// Usage: bench-grammar --tokenizer PATH [--runs N]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/grammar/json_schema.hpp"
#include "text/grammar/matcher.hpp"
#include "text/grammar/token_mask.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace vks;
using clock_type = std::chrono::steady_clock;

namespace {

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

const char* k_schema = R"({"type":"object","properties":{
  "name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string"},
  "tags":{"type":"array","items":{"type":"string"}},
  "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},
    "zip":{"type":"string","pattern":"[0-9]{5}"}},"required":["street","city","zip"]},
  "bio":{"type":"string"}},
  "required":["name","age","email","tags","address","bio"]})";

const char* k_document = R"({"name": "Natasha Rostova", "age": 20, "email": "natasha@example.org",
  "tags": ["countess", "singer", "Moscow"],
  "address": {"street": "Povarskaya 12", "city": "Moscow", "zip": "12100"},
  "bio": "The younger daughter of Count Ilya Rostov; lively, warm and musical, she grows from a girl at her name-day party into a woman tested by war, loss and love."})";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench-grammar: structured-output mask cost per token"};
  std::string tok_path;
  int runs = 3;
  app.add_option("--tokenizer", tok_path, "tokenizer (.gguf or Hugging Face directory)")->required();
  app.add_option("--runs", runs, "passes over the document (the best is reported)");
  CLI11_PARSE(app, argc, argv);

  auto tok = text::tokenizer::load(tok_path);
  if (!tok) {
    std::fprintf(stderr, "bench-grammar: %s\n", tok.error().message.c_str());
    return 1;
  }
  auto g = text::grammar::compile_json_schema(nlohmann::ordered_json::parse(k_schema));
  if (!g) {
    std::fprintf(stderr, "bench-grammar: %s\n", g.error().message.c_str());
    return 1;
  }
  auto grammar = std::make_shared<const text::grammar::grammar>(std::move(*g));
  const auto t_index = clock_type::now();
  text::grammar::vocab_index idx(**tok);
  const double index_ms = ms_since(t_index);
  const auto ids = (*tok)->encode(k_document, false, false);

  double best_unc_mean = 1e30, best_unc_max = 0, best_cached = 1e30, best_argmax = 1e30, hit_rate = 0;
  std::vector<float> logits(static_cast<std::size_t>((*tok)->n_vocab()));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-10, 10);
  for (auto& v : logits) v = dist(rng);
  for (int run = 0; run < runs; ++run) {
    text::grammar::matcher m(grammar);
    text::grammar::mask_cache cache;
    std::vector<std::uint8_t> mask;
    double unc_sum = 0, unc_max = 0, cached_sum = 0, argmax_sum = 0;
    volatile std::size_t sink = 0;
    for (std::int32_t id : ids) {
      auto t0 = clock_type::now();
      idx.allowed(m, mask);
      const double u = ms_since(t0);
      unc_sum += u;
      unc_max = std::max(unc_max, u);
      if (!mask[static_cast<std::size_t>(id)]) {
        std::fprintf(stderr, "bench-grammar: the document's token %d is refused\n", id);
        return 1;
      }
      t0 = clock_type::now();
      sink = sink + cache.get(idx, m, false).n_allowed;
      cached_sum += ms_since(t0);
      t0 = clock_type::now();
      sink = sink + static_cast<std::size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      argmax_sum += ms_since(t0);
      if (!m.accept((*tok)->token_text(id))) return 1;
    }
    const double n = static_cast<double>(ids.size());
    if (unc_sum / n < best_unc_mean) {
      best_unc_mean = unc_sum / n;
      best_unc_max = unc_max;
    }
    best_cached = std::min(best_cached, cached_sum / n);
    best_argmax = std::min(best_argmax, argmax_sum / n);
    hit_rate = static_cast<double>(cache.hits()) / static_cast<double>(cache.hits() + cache.misses());
  }
  std::printf("{\"tokenizer\":\"%s\",\"n_vocab\":%d,\"index_ms\":%.1f,\"tokens\":%zu,\"uncached_ms_mean\":%.3f,"
              "\"uncached_ms_max\":%.3f,\"cached_ms_mean\":%.3f,\"cache_hit_rate\":%.3f,\"argmax_ms_mean\":%.4f}\n",
              tok_path.c_str(), (*tok)->n_vocab(), index_ms, ids.size(), best_unc_mean, best_unc_max, best_cached,
              hit_rate, best_argmax);
  return 0;
}
