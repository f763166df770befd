// bench_decode (a benchmark, not a test; driven by tools/bench-decode and tools/bench-gpu):
// vkserve's side of the prefill/decode comparison with llama.cpp. Loads a model on the
// Vulkan backend, warms up (pipelines compiled, command buffers recorded), then times one
// prefill of n_prompt fixed token ids (one step) and n_gen greedy decode steps (one token
// each, logits downloaded and argmax'd on the host, as llama.cpp does; --argmax: the
// device argmax that serve uses, one id read back). Prints one JSON line, with record_us and
// wait_us: the medians over the decode steps of the host time recording a step and blocked
// on its fence (gpu::step_stats::record_ns / wait_ns).
//   bench_decode MODEL [N_PROMPT=128] [N_GEN=64] [DEVICE] [--profile] [--argmax]
//                [--kv-cache-dtype f32|f16|q8_0] [--streams 1,4,16,64] [--bandwidth] [--bytes-only]
// --streams: aggregate decode tokens/s of S sequences decoding together (16-token prompts,
// N_GEN steps of S tokens, device argmax), per S. --bandwidth: a streaming kernel's
// bandwidth (y = x + z over 96 MiB vectors, 32 MiB on CPU devices; bytes read and written
// / time) measured in the same process. Either adds weight_bytes (what a decode step must read of the weights) and
// kv_bytes_per_token (the KV bytes the batch-1 decode reads per token, averaged). Always:
// step_bytes_moved, the recorder's bytes-moved estimate of the last decode step (weights, KV
// and activations as its kernels bind and re-read them), and step_dispatches.
// VKS_VK_TUNING (as in the kernel tests: cpu, cpu:ssbo, gpu, ...) forces a kernel selection;
// VKS_VK_DELTA_CHUNK (gpu::vk_options::delta_chunk) the gated DeltaNet prefill kernel (0: recurrent).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "gpu/backend.hpp"
#include "model/model_file.hpp"
#include "model/kv_cache.hpp"
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
  std::vector<uint64_t> record_ns, wait_ns;  // per decode step (gpu::step_stats)
};

uint64_t median_us(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2] / 1000;
}

// The device argmax of a decode batch's rows (what serve asks for greedy rows).
result<std::vector<int32_t>> step_argmax(model::runner& r, model::batch& b) {
  b.needs.assign(b.logit_rows.size(), model::logit_need{model::logit_kind::argmax, 0});
  auto o = r.forward_step(b);
  if (!o) return fail(std::move(o).error());
  std::vector<int32_t> ids;
  for (size_t i = 0; i < b.logit_rows.size(); ++i)
    ids.push_back(o->needs[i].kind == model::logit_kind::argmax ? o->token(i) : model::argmax(o->row(i)));
  return ids;
}

result<timing> run_once(model::runner& r, const std::vector<int32_t>& prompt, int n_gen, bool device_argmax) {
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
    if (device_argmax) {
      auto ids = step_argmax(r, d);
      if (!ids) return fail(std::move(ids).error());
      next = (*ids)[0];
    } else {
      auto ld = r.forward(d);
      if (!ld) return fail(std::move(ld).error());
      next = model::argmax(*ld);
    }
    const auto st = r.backend().last_step_stats();
    t.record_ns.push_back(st.record_ns);
    t.wait_ns.push_back(st.wait_ns);
  }
  auto t2 = clock_type::now();
  r.kv().release(seq);
  t.prefill_s = std::chrono::duration<double>(t1 - t0).count();
  t.decode_s = std::chrono::duration<double>(t2 - t1).count();
  return t;
}

constexpr int k_stream_prompt = 16;  // prompt tokens per stream in --streams

// Aggregate decode tokens/s of S sequences: each prefilled with k_stream_prompt ids (one
// batch, untimed), then n_gen timed steps of S tokens with the device argmax.
result<double> streams_tok_s(model::runner& r, int S, int n_gen) {
  std::vector<model::kv_sequence> seqs(static_cast<size_t>(S));
  for (auto& q : seqs) VKS_TRY(r.kv().reserve(q, k_stream_prompt + n_gen + 1));
  model::batch b;
  for (int s = 0; s < S; ++s) {
    b.block_tables.push_back(seqs[static_cast<size_t>(s)].blocks);
    std::vector<int32_t> ids;
    for (int i = 0; i < k_stream_prompt; ++i) ids.push_back(3 + (s * 131 + i * 7919 + 13) % (r.config().n_vocab - 3));
    b.add_tokens(s, ids, 0, true);
  }
  auto next = step_argmax(r, b);
  if (!next) return fail(std::move(next).error());
  const auto t0 = clock_type::now();
  for (int i = 0; i < n_gen; ++i) {
    model::batch d;
    for (int s = 0; s < S; ++s) {
      d.block_tables.push_back(seqs[static_cast<size_t>(s)].blocks);
      d.add_tokens(s, std::span(&(*next)[static_cast<size_t>(s)], 1), k_stream_prompt + i, true);
    }
    next = step_argmax(r, d);
    if (!next) return fail(std::move(next).error());
  }
  const double dt = std::chrono::duration<double>(clock_type::now() - t0).count();
  for (auto& q : seqs) r.kv().release(q);
  return S * n_gen / dt;
}

// A streaming kernel's bandwidth in GB/s: y = x + z over n f32 (the backend's add: texel
// loads on CPU devices), R times in one step after a warm-up; bytes = 3 n * 4 per pass
// (two reads, one write), the best of two timed rounds.
result<double> copy_gb_s(gpu::backend& be) {
  // f32 elements: 96 MiB vectors on GPUs (past any L2, under a 128 MiB maxStorageBufferRange).
  const int64_t n = be.info().kind == "cpu" ? (int64_t{8} << 20) : (int64_t{24} << 20);
  std::array<gpu::tensor, 3> t;
  for (auto& x : t) {
    auto a = be.alloc(gpu::dtype::f32, {n, 1, 1, 1}, "bw");
    if (!a) return fail(std::move(a).error());
    x = *a;
  }
  const int reps = be.info().kind == "cpu" ? 4 : 20;
  double best = 0;
  for (int round = 0; round < 3; ++round) {  // round 0 warms up
    const auto t0 = clock_type::now();
    be.begin_step();
    for (int i = 0; i < reps; ++i) be.add(t[0], t[1], t[2]);
    VKS_TRY(be.submit());
    const double dt = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (round > 0) best = std::max(best, 3.0 * 4.0 * static_cast<double>(n) * reps / dt / 1e9);
  }
  return best;
}

// What a decode step must read of the weights: every weight once, except an untied
// embedding table, of which it reads one row (as vkserve generate --stats counts it).
uint64_t decode_weight_bytes(model::runner& r) {
  const auto& w = r.weights();
  const bool tied = w.output.buf == w.tok_embd.buf && w.output.offset == w.tok_embd.offset;
  return w.n_bytes - (tied ? 0 : w.tok_embd.nbytes() - gpu::row_bytes(w.tok_embd.type, static_cast<uint64_t>(w.tok_embd.ne[0])));
}

// --bytes-only: one batch-1 decode step at position n_prompt + n_gen - 1 over a reserved but
// never computed context (its K/V rows are whatever the pool holds): what the step's kernels
// bind and read does not depend on the values, so the bytes-moved model of a long context is
// had without its prefill (a minute per 8B layer on lavapipe). Run twice: pipelines first.
result<void> bytes_only_step(model::runner& r, int ctx) {
  for (int round = 0; round < 2; ++round) {
    model::kv_sequence seq;
    VKS_TRY(r.kv().reserve(seq, ctx));
    model::batch d;
    d.block_tables.push_back(seq.blocks);
    const int32_t id = 3;
    d.add_tokens(0, std::span(&id, 1), ctx - 1, true);
    auto ids = step_argmax(r, d);
    r.kv().release(seq);
    if (!ids) return fail(std::move(ids).error());
  }
  return ok();
}

struct bench_options {
  int n_prompt = 128, n_gen = 64;
  std::string device, kv_dtype = "auto";
  bool profile = false, device_argmax = false, bandwidth = false, bytes_only = false;
  std::vector<int> streams;
};

result<void> bench(const std::string& path, const bench_options& bo) {
  const int n_prompt = bo.n_prompt, n_gen = bo.n_gen;
  const std::string& device = bo.device;
  const bool profile = bo.profile;
  auto file = model::model_file::open(path);
  if (!file) return fail(std::move(file).error());
  gpu::vk_options o;
  o.device = device;
  o.profile = profile;
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;
  if (const char* c = std::getenv("VKS_VK_DELTA_CHUNK")) o.delta_chunk = std::atoi(c);
  auto be = gpu::make_vk_backend(o);
  if (!be) return fail(std::move(be).error());
  auto kv_type = model::kv_cache_dtype(bo.kv_dtype, (*be)->info());
  if (!kv_type) return fail(std::move(kv_type).error());
  int max_streams = 1;
  for (int s : bo.streams) max_streams = std::max(max_streams, s);
  model::runner_options ro;
  ro.max_context = n_prompt + n_gen + 16;
  const int stream_blocks = bo.streams.empty() ? 0 : max_streams * ((k_stream_prompt + n_gen + 16) / 16 + 1);
  ro.kv_blocks = std::max((ro.max_context + 15) / 16 + 1, stream_blocks);
  ro.max_seqs = max_streams;
  ro.max_logit_rows = max_streams;
  ro.max_batch_tokens = std::max(n_prompt, bo.streams.empty() ? 0 : max_streams);
  ro.kv_type = *kv_type;
  auto r = model::runner::load(*file, **be, ro);
  if (!r) return fail(std::move(r).error());
  const auto ids = prompt_ids(n_prompt, (*r)->config().n_vocab);
  timing t0;
  if (bo.bytes_only) VKS_TRY(bytes_only_step(**r, n_prompt + n_gen));
  else VKS_TRY(run_once(**r, ids, n_gen, bo.device_argmax));  // warm-up
  auto t = bo.bytes_only ? result<timing>(t0) : run_once(**r, ids, n_gen, bo.device_argmax);
  if (!t) return fail(std::move(t).error());
  // The bytes-moved model (#20): the recorder's estimate for the last batch-1 decode step
  // (each dispatch's bound weight, KV and activation ranges, KV counted once per kernel pass
  // over it: gpu/vk's attention counts its GQA re-reads), next to weight_bytes +
  // kv_bytes_per_token: a ratio over 1 is redundant traffic.
  const gpu::step_stats ds = (*be)->last_step_stats();
  std::ostringstream extra;
  extra << ",\"step_bytes_moved\":" << ds.bytes_moved << ",\"step_dispatches\":" << ds.dispatches;
  {
    const auto& c = (*r)->config();
    const uint64_t kv_row = gpu::row_bytes(*kv_type, static_cast<uint64_t>(c.n_head_kv) * static_cast<uint64_t>(c.head_dim));
    // Decode step i (position n_prompt + i) reads n_prompt + i + 1 rows of K and of V per layer.
    const double avg_ctx = n_prompt + (n_gen + 1) / 2.0;
    extra << ",\"kv_cache_dtype\":\"" << gpu::traits(*kv_type).name << "\",\"weight_bytes\":" << decode_weight_bytes(**r)
          << ",\"kv_bytes_per_token\":" << static_cast<uint64_t>(2.0 * kv_row * c.n_layer * avg_ctx)
          << ",\"kv_bytes_last_step\":" << 2 * kv_row * static_cast<uint64_t>(c.n_layer) * static_cast<uint64_t>(n_prompt + n_gen);
  }
  if (!bo.streams.empty()) {
    extra << ",\"streams\":[";
    for (size_t i = 0; i < bo.streams.size(); ++i) {
      VKS_TRY(streams_tok_s(**r, bo.streams[i], std::max(2, n_gen / 4)));  // warm-up: this batch shape
      auto tok_s = streams_tok_s(**r, bo.streams[i], n_gen);
      if (!tok_s) return fail(std::move(tok_s).error());
      extra << (i ? "," : "") << "{\"n\":" << bo.streams[i] << ",\"tok_s\":" << *tok_s << "}";
    }
    extra << "]";
  }
  if (bo.bandwidth) {
    auto bw = copy_gb_s(**be);
    if (!bw) return fail(std::move(bw).error());
    extra << ",\"copy_gb_s\":" << *bw;
  }
  std::printf(
      "{\"engine\":\"vkserve\",\"device\":\"%s\",\"device_kind\":\"%s\",\"n_vocab\":%d,\"n_prompt\":%d,\"n_gen\":%d,"
      "\"prefill_tok_s\":%.3f,\"decode_tok_s\":%.3f,\"record_us\":%llu,\"wait_us\":%llu%s}\n",
      (*be)->info().name.c_str(), (*be)->info().kind.c_str(), (*r)->config().n_vocab, n_prompt, n_gen,
      t->prefill_s > 0 ? n_prompt / t->prefill_s : 0.0, t->decode_s > 0 ? n_gen / t->decode_s : 0.0,
      static_cast<unsigned long long>(median_us(t->record_ns)), static_cast<unsigned long long>(median_us(t->wait_ns)),
      extra.str().c_str());
  std::fflush(stdout);
  return ok();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bench_options bo;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--profile") bo.profile = true;
    else if (a == "--argmax") bo.device_argmax = true;
    else if (a == "--bandwidth") bo.bandwidth = true;
    else if (a == "--bytes-only") bo.bytes_only = true;
    else if (a == "--kv-cache-dtype" && i + 1 < argc) bo.kv_dtype = argv[++i];
    else if (a == "--streams" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string n; std::getline(ss, n, ',');) bo.streams.push_back(std::max(1, std::atoi(n.c_str())));
    } else args.push_back(a);
  }
  if (args.empty()) {
    std::fprintf(stderr,
                 "usage: bench_decode MODEL [N_PROMPT=128] [N_GEN=64] [DEVICE] [--profile] [--argmax]\n"
                 "                    [--kv-cache-dtype f32|f16|q8_0] [--streams 1,4,16,64] [--bandwidth] [--bytes-only]\n");
    return 2;
  }
  log::init(bo.profile ? "info" : "warn");
  if (args.size() > 1) bo.n_prompt = std::stoi(args[1]);
  if (args.size() > 2) bo.n_gen = std::stoi(args[2]);
  if (args.size() > 3) bo.device = args[3];
  auto r = bench(args[0], bo);
  if (!r) {
    std::fprintf(stderr, "bench_decode: %s\n", r.error().message.c_str());
    return 1;
  }
  return 0;
}
