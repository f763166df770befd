// bench-tokenize: single-thread tokenizer throughput, the figure behind the tokenizer
// issue (>= 10 MB/s for byte-level BPE, >= 5x the @huggingface/transformers npm tokenizer;
// tools/bench-tokenize runs both and compares). Loads a tokenizer (.gguf or Hugging Face
// directory), reads a text file (default war-and-peace.txt), encodes the whole text once
// as a warm-up, then --runs more times on this one thread, each as one
// encode(text, add_special=false, parse_special=false) call. Prints one JSON line:
//   {"tokenizer","bytes","tokens","best_s","median_s","mb_per_s"}
// where mb_per_s = bytes / median_s / 1e6 (MB = 1e6 bytes). --dump-ids writes the ids of
// the encoding, one per line, for the equality check against the peer.
// Usage: bench-tokenize --tokenizer PATH [--pre NAME] [--text FILE] [--runs N]
//                       [--dump-ids FILE]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "text/tokenizer/tokenizer.hpp"

using namespace vks;
using clock_type = std::chrono::steady_clock;

namespace {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
      continue;
    }
    o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"single-thread tokenizer throughput"};
  std::string tok_path, pre, text_path, dump_path;
  int runs = 5;
  app.add_option("--tokenizer", tok_path, ".gguf file or Hugging Face tokenizer directory")->required();
  app.add_option("--pre", pre, "pre-tokenizer preset (e.g. qwen2); default: from the files");
  app.add_option("--text", text_path, "text to encode (default: $VKS_SHARED/models/corpora/war-and-peace.txt)");
  app.add_option("--runs", runs, "timed runs after the warm-up")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--dump-ids", dump_path, "write the token ids, one per line, to this file");
  CLI11_PARSE(app, argc, argv);
  if (text_path.empty()) {
    const char* sh = std::getenv("VKS_SHARED");
    text_path = std::string(sh ? sh : "../shared") + "/models/corpora/war-and-peace.txt";
  }
  std::ifstream in(text_path, std::ios::binary);
  if (!in) return std::fprintf(stderr, "bench-tokenize: cannot read %s\n", text_path.c_str()), 1;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();

  text::load_options opt;
  opt.pre = pre;
  auto tok = text::tokenizer::load(tok_path, opt);
  if (!tok) return std::fprintf(stderr, "bench-tokenize: %s\n", tok.error().message.c_str()), 1;

  // Warm-up (page faults, allocator, caches); its ids are the ones dumped.
  const std::vector<int32_t> ids = (*tok)->encode(text, false, false);
  std::vector<double> secs;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = clock_type::now();
    const auto out = (*tok)->encode(text, false, false);
    const auto t1 = clock_type::now();
    if (out.size() != ids.size()) {
      std::fprintf(stderr, "bench-tokenize: run %d gave %zu tokens, warm-up %zu\n", r, out.size(), ids.size());
      return 1;
    }
    secs.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(secs.begin(), secs.end());
  const size_t n = secs.size();
  const double median = n % 2 ? secs[n / 2] : (secs[n / 2 - 1] + secs[n / 2]) / 2;

  if (!dump_path.empty()) {
    std::FILE* f = std::fopen(dump_path.c_str(), "wb");
    if (!f) return std::fprintf(stderr, "bench-tokenize: cannot write %s\n", dump_path.c_str()), 1;
    for (int32_t id : ids) std::fprintf(f, "%d\n", id);
    std::fclose(f);
  }

  std::printf("{\"tokenizer\":\"%s\",\"bytes\":%zu,\"tokens\":%zu,\"best_s\":%.6f,\"median_s\":%.6f,\"mb_per_s\":%.3f}\n",
              json_escape(tok_path).c_str(), text.size(), ids.size(), secs.front(), median,
              static_cast<double>(text.size()) / median / 1e6);
  return 0;
}
