// bench_decode (a benchmark, not a test; driven by tools/bench-decode): vkserve's side of
// the prefill/decode comparison with llama.cpp. Loads a model on the Vulkan backend, warms
// up (pipelines compiled, command buffers recorded), then times one prefill of n_prompt
// fixed token ids (one step) and n_gen greedy decode steps (one token each, logits
// downloaded and argmax'd on the host, as llama.cpp does). Prints one JSON line.
//   bench_decode MODEL [N_PROMPT=128] [N_GEN=64] [DEVICE] [--profile]
// VKS_VK_TUNING (as in the kernel tests: cpu, cpu:ssbo, gpu, ...) forces a kernel selection.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "gpu/backend.hpp"
#include "model/model_file.hpp"
#include "model/runner.hpp"

using namespace vks;
using clock_type = std::chrono::steady_clock;

namespace {

// Same id sequence as tools/bench-decode-peer.mjs.
std::vector<int32_t> prompt_ids(int n, int vocab) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(3 + static_cast<int32_t>((int64_t{i} * 7919 + 13) % (vocab - 3)));
  return ids;
}

struct timing {
  double prefill_s = 0, decode_s = 0;
};

result<timing> run_once(model::runner& r, const std::vector<int32_t>& prompt, int n_gen) {
  model::kv_sequence seq;
  VKS_TRY(r.kv().reserve(seq, static_cast<int>(prompt.size()) + n_gen + 1));
  timing t;
  auto t0 = clock_type::now();
  model::batch b;
  b.block_tables.push_back(seq.blocks);
  b.add_tokens(0, prompt, 0, true);
  auto l = r.forward(b);
  if (!l) return fail(std::move(l).error());
  auto t1 = clock_type::now();
  int32_t next = model::argmax(*l);
  for (int i = 0; i < n_gen; ++i) {
    model::batch d;
    d.block_tables.push_back(seq.blocks);
    d.add_tokens(0, std::span(&next, 1), static_cast<int32_t>(prompt.size()) + i, true);
    auto ld = r.forward(d);
    if (!ld) return fail(std::move(ld).error());
    next = model::argmax(*ld);
  }
  auto t2 = clock_type::now();
  r.kv().release(seq);
  t.prefill_s = std::chrono::duration<double>(t1 - t0).count();
  t.decode_s = std::chrono::duration<double>(t2 - t1).count();
  return t;
}

result<void> bench(const std::string& path, int n_prompt, int n_gen, const std::string& device, bool profile) {
  auto file = model::model_file::open(path);
  if (!file) return fail(std::move(file).error());
  gpu::vk_options o;
  o.device = device;
  o.profile = profile;
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;
  auto be = gpu::make_vk_backend(o);
  if (!be) return fail(std::move(be).error());
  model::runner_options ro;
  ro.max_context = n_prompt + n_gen + 16;
  ro.kv_blocks = (ro.max_context + 15) / 16 + 1;
  ro.max_seqs = 1;
  ro.max_logit_rows = 1;
  ro.max_batch_tokens = n_prompt;
  auto r = model::runner::load(*file, **be, ro);
  if (!r) return fail(std::move(r).error());
  const auto ids = prompt_ids(n_prompt, (*r)->config().n_vocab);
  VKS_TRY(run_once(**r, ids, n_gen));  // warm-up
  auto t = run_once(**r, ids, n_gen);
  if (!t) return fail(std::move(t).error());
  std::printf(
      "{\"engine\":\"vkserve\",\"device\":\"%s\",\"n_vocab\":%d,\"n_prompt\":%d,\"n_gen\":%d,"
      "\"prefill_tok_s\":%.3f,\"decode_tok_s\":%.3f}\n",
      (*be)->info().name.c_str(), (*r)->config().n_vocab, n_prompt, n_gen, n_prompt / t->prefill_s, n_gen / t->decode_s);
  std::fflush(stdout);
  return ok();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--profile") == 0) profile = true;
    else args.emplace_back(argv[i]);
  }
  if (args.empty()) {
    std::fprintf(stderr, "usage: bench_decode MODEL [N_PROMPT=128] [N_GEN=64] [DEVICE] [--profile]\n");
    return 2;
  }
  log::init(profile ? "info" : "warn");
  const int n_prompt = args.size() > 1 ? std::stoi(args[1]) : 128;
  const int n_gen = args.size() > 2 ? std::stoi(args[2]) : 64;
  auto r = bench(args[0], n_prompt, n_gen, args.size() > 3 ? args[3] : "", profile);
  if (!r) {
    std::fprintf(stderr, "bench_decode: %s\n", r.error().message.c_str());
    return 1;
  }
  return 0;
}
