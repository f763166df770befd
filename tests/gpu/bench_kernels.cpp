// bench_gpu_kernels: times the gpu backend on a synthetic llama-shaped forward step (the same
// op sequence a llama decode/prefill step records: norm, qkv, rope, kv_store, attention, o,
// add, norm, gate/up, silu_mul, down, add; final norm, lm head, argmax) with random weights,
// plus single matmuls in GB/s. Not a test; prints one JSON line per measurement.
// VKS_VK_TUNING picks the kernel family as in the tests (default: this device's).
// Usage: bench_gpu_kernels [smollm|stories|k256] [weight type] [T tokens] [steps] [--profile] [--ref]
//        bench_gpu_kernels attn [S sequences] [context] [f32|f16|q8_0 cache] [same|mixed|sorted]
//        [--ref]: decode attention alone (SmolLM2's 9/3 heads of 64), one query token for
//        each of S sequences, as while serving S streams; `same`: every sequence has
//        `context` keys; `mixed`: sequence s has context * (1 + 7 * ((s * 5) % S) / (S - 1)) / 8
//        keys (a spread, in scrambled order); `sorted`: those contexts, longest first.
#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "gpu/backend.hpp"
#include "gpu/quant.hpp"

using namespace vks::gpu;

namespace {

struct shape {
  int n_layer, dim, n_head, n_kv, ffn, vocab;
};

std::vector<std::byte> rand_weights(dtype t, int64_t K, int64_t N, uint32_t seed) {
  std::vector<float> row(static_cast<size_t>(K));
  std::vector<std::byte> out(row_bytes(t, static_cast<uint64_t>(K)) * static_cast<uint64_t>(N));
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t n = 0; n < N; ++n) {
    for (auto& v : row) {
      s = s * 1664525u + 1013904223u;
      v = (static_cast<float>(s >> 8) / 16777216.f - 0.5f) * 0.1f;
    }
    quantize_row(t, row.data(), out.data() + row_bytes(t, static_cast<uint64_t>(K)) * static_cast<uint64_t>(n), K);
  }
  return out;
}

tensor mk(backend& b, dtype t, std::array<int64_t, 4> ne, const std::vector<std::byte>& data = {}) {
  auto r = b.alloc(t, ne, "bench");
  if (!r) { std::fprintf(stderr, "alloc: %s\n", r.error().message.c_str()); std::exit(1); }
  if (!data.empty() && !b.upload(*r, data).ok()) std::exit(1);
  return *r;
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
// CPU seconds used by the whole process (all threads: lavapipe runs kernels on our threads).
double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return true;
  return false;
}

// The reference backend, or the Vulkan one (nullptr, reason printed, when there is none).
std::unique_ptr<backend> open_backend(bool ref, bool profile) {
  if (ref) return make_ref_backend();
  vk_options o{"", false, profile};
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;  // another kernel family (e.g. gpu:32:q8)
  auto r = make_vk_backend(o);
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().message.c_str());
    return nullptr;
  }
  return std::move(*r);
}

// Decode attention: S sequences with up to `ctx` cached keys each (see the usage for
// `mix`), one query token each.
int bench_attention(backend& b, int S, int ctx, dtype kvt, const std::string& mix) {
  const int H = 9, Hkv = 3, D = 64, B = 16, maxb = (ctx + B - 1) / B;
  std::vector<float> qv(static_cast<size_t>(H * D * S)), kv(static_cast<size_t>(Hkv * D * maxb * B * S));
  uint32_t st = 7;
  for (auto* v : {&qv, &kv})
    for (auto& x : *v) st = st * 1664525u + 1013904223u, x = static_cast<float>(st >> 8) / 16777216.f - 0.5f;
  auto q = mk(b, dtype::f32, {H * D, S, 1, 1}, bytes_of(qv)), out = mk(b, dtype::f32, {H * D, S, 1, 1});
  auto kc = mk(b, kvt, {Hkv * D, maxb * B * S, 1, 1}), vc = mk(b, kvt, {Hkv * D, maxb * B * S, 1, 1});
  auto kf = mk(b, dtype::f32, {Hkv * D, maxb * B * S, 1, 1}, bytes_of(kv));
  auto slots_all = std::vector<int32_t>(static_cast<size_t>(maxb * B * S));
  for (size_t i = 0; i < slots_all.size(); ++i) slots_all[i] = static_cast<int32_t>(i);
  auto sl = mk(b, dtype::i32, {maxb * B * S, 1, 1, 1}, bytes_of(slots_all));
  b.begin_step();
  b.kv_store(kc, vc, kf, kf, sl);  // fills both caches (converting for f16)
  if (!b.submit().ok()) return 1;
  std::vector<int32_t> btv(static_cast<size_t>(maxb * S)), sv(static_cast<size_t>(S)), pv(static_cast<size_t>(S), ctx - 1);
  if (mix != "same" && S > 1)
    for (int s = 0; s < S; ++s) pv[static_cast<size_t>(s)] = ctx * (1 + 7 * ((s * 5) % S) / (S - 1)) / 8 - 1;
  if (mix == "sorted") std::sort(pv.begin(), pv.end(), std::greater<>());
  for (int i = 0; i < maxb * S; ++i) btv[static_cast<size_t>(i)] = i;  // sequence s owns blocks s * maxb ...
  for (int s = 0; s < S; ++s) sv[static_cast<size_t>(s)] = s;
  auto bt = mk(b, dtype::i32, {maxb, S, 1, 1}, bytes_of(btv)), seq = mk(b, dtype::i32, {S, 1, 1, 1}, bytes_of(sv));
  auto pos = mk(b, dtype::i32, {S, 1, 1, 1}, bytes_of(pv));
  const attention_params ap{H, Hkv, D, B, maxb, 1.f / std::sqrt(static_cast<float>(D))};
  const int reps = 20;
  b.begin_step();
  b.attention(out, q, kc, vc, bt, seq, pos, ap);
  if (!b.submit().ok()) return 1;
  const double s0 = now_s();
  for (int r = 0; r < reps; ++r) {
    b.begin_step();
    for (int i = 0; i < 4; ++i) b.attention(out, q, kc, vc, bt, seq, pos, ap);
    if (!b.submit().ok()) return 1;
  }
  const double per = (now_s() - s0) / (reps * 4);
  std::vector<float> o(qv.size());
  if (!b.download(out, std::as_writable_bytes(std::span(o))).ok()) return 1;
  double sum = 0;
  for (float x : o) sum += x;
  std::printf("{\"bench\":\"attention\",\"S\":%d,\"context\":%d,\"contexts\":\"%s\",\"cache\":\"%s\",\"us\":%.1f,\"checksum\":%.6f}\n", S,
              ctx, mix.c_str(), std::string(traits(kvt).name).c_str(), per * 1e6, sum);
  return 0;
}

int main(int argc, char** argv) {
  vks::log::init("info");
  if (argc > 1 && std::strcmp(argv[1], "attn") == 0) {
    auto be = open_backend(has_flag(argc, argv, "--ref"), false);
    if (!be) return 77;
    const dtype kvt = argc > 4 && std::strcmp(argv[4], "f16") == 0    ? dtype::f16
                      : argc > 4 && std::strcmp(argv[4], "q8_0") == 0 ? dtype::q8_0
                                                                     : dtype::f32;
    const std::string mix = argc > 5 && argv[5][0] != '-' ? argv[5] : "same";
    return bench_attention(*be, argc > 2 ? std::atoi(argv[2]) : 16, argc > 3 ? std::atoi(argv[3]) : 256, kvt, mix);
  }
  std::string model = argc > 1 ? argv[1] : "smollm", tname = argc > 2 ? argv[2] : "q8_0";
  const int T = argc > 3 ? std::atoi(argv[3]) : 1, steps = argc > 4 ? std::atoi(argv[4]) : 10;
  // k256: every dimension a multiple of 256 (the K-quants), 4 layers of a 1B-class width.
  const shape sh = model == "stories" ? shape{5, 64, 8, 4, 172, 512}
                   : model == "k256"  ? shape{4, 1024, 16, 4, 2816, 8192}
                                      : shape{30, 576, 9, 3, 1536, 49152};
  dtype wt = dtype::q8_0;
  for (auto t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q8_0, dtype::q4_0, dtype::q4_K, dtype::q6_K, dtype::q5_K,
                 dtype::q4_1, dtype::q5_0, dtype::q5_1})
    if (traits(t).name == tname) wt = t;
  if (model == "stories" && traits(wt).block_elems == 256) wt = dtype::f32;
  auto be = open_backend(has_flag(argc, argv, "--ref"), has_flag(argc, argv, "--profile"));
  if (!be) return 77;
  backend& b = *be;
  const int D = sh.dim / sh.n_head, Wkv = sh.n_kv * D, B = 16, ctx = 512, maxb = ctx / B;
  struct layer { tensor an, wq, wk, wv, wo, fn, wg, wu, wd, kc, vc; };
  std::vector<layer> L(static_cast<size_t>(sh.n_layer));
  const std::vector<float> ones(static_cast<size_t>(sh.dim), 1.f);
  for (int l = 0; l < sh.n_layer; ++l) {
    auto u = static_cast<uint32_t>(l * 16);
    L[l] = {mk(b, dtype::f32, {sh.dim, 1, 1, 1}, bytes_of(ones)),
            mk(b, wt, {sh.dim, sh.dim, 1, 1}, rand_weights(wt, sh.dim, sh.dim, u + 1)),
            mk(b, wt, {sh.dim, Wkv, 1, 1}, rand_weights(wt, sh.dim, Wkv, u + 2)),
            mk(b, wt, {sh.dim, Wkv, 1, 1}, rand_weights(wt, sh.dim, Wkv, u + 3)),
            mk(b, wt, {sh.dim, sh.dim, 1, 1}, rand_weights(wt, sh.dim, sh.dim, u + 4)),
            mk(b, dtype::f32, {sh.dim, 1, 1, 1}, bytes_of(ones)),
            mk(b, wt, {sh.dim, sh.ffn, 1, 1}, rand_weights(wt, sh.dim, sh.ffn, u + 5)),
            mk(b, wt, {sh.dim, sh.ffn, 1, 1}, rand_weights(wt, sh.dim, sh.ffn, u + 6)),
            mk(b, wt, {sh.ffn, sh.dim, 1, 1}, rand_weights(wt, sh.ffn, sh.dim, u + 7)),
            mk(b, dtype::f32, {Wkv, ctx, 1, 1}), mk(b, dtype::f32, {Wkv, ctx, 1, 1})};
  }
  auto emb = mk(b, wt, {sh.dim, sh.vocab, 1, 1}, rand_weights(wt, sh.dim, sh.vocab, 999));
  auto onorm = mk(b, dtype::f32, {sh.dim, 1, 1, 1}, bytes_of(ones));
  auto x = mk(b, dtype::f32, {sh.dim, T, 1, 1}), h = mk(b, dtype::f32, {sh.dim, T, 1, 1});
  auto q = mk(b, dtype::f32, {sh.dim, T, 1, 1}), k = mk(b, dtype::f32, {Wkv, T, 1, 1}), v = mk(b, dtype::f32, {Wkv, T, 1, 1});
  auto att = mk(b, dtype::f32, {sh.dim, T, 1, 1});
  auto g = mk(b, dtype::f32, {sh.ffn, T, 1, 1}), up = mk(b, dtype::f32, {sh.ffn, T, 1, 1});
  auto logits = mk(b, dtype::f32, {sh.vocab, T, 1, 1}), am = mk(b, dtype::i32, {T, 1, 1, 1});
  auto tok = mk(b, dtype::i32, {T, 1, 1, 1}), pos = mk(b, dtype::i32, {T, 1, 1, 1});
  auto seq = mk(b, dtype::i32, {T, 1, 1, 1}), slots = mk(b, dtype::i32, {T, 1, 1, 1});
  std::vector<int32_t> btv(static_cast<size_t>(maxb));
  for (int i = 0; i < maxb; ++i) btv[static_cast<size_t>(i)] = i;
  auto bt = mk(b, dtype::i32, {maxb, 1, 1, 1}, bytes_of(btv));
  tensor none;
  none.ne = {0, 1, 1, 1};
  const attention_params ap{sh.n_head, sh.n_kv, D, B, maxb, 1.f / std::sqrt(static_cast<float>(D))};
  const rope_params rp{rope_mode::normal, D, 10000.f, 1.f};

  auto step = [&](int p0) {
    std::vector<int32_t> tv(static_cast<size_t>(T)), pv(static_cast<size_t>(T)), sv(static_cast<size_t>(T), 0);
    for (int t = 0; t < T; ++t) tv[static_cast<size_t>(t)] = (p0 + t) % sh.vocab, pv[static_cast<size_t>(t)] = p0 + t;
    b.begin_step();
    (void)b.upload(tok, bytes_of(tv));
    (void)b.upload(pos, bytes_of(pv));
    (void)b.upload(slots, bytes_of(pv));
    (void)b.upload(seq, bytes_of(sv));
    b.get_rows(x, emb, tok);
    for (auto& l : L) {
      b.rms_norm(h, x, l.an, 1e-5f);
      b.matmul(q, l.wq, h);
      b.matmul(k, l.wk, h);
      b.matmul(v, l.wv, h);
      b.rope(q.view({D, sh.n_head, T, 1}), pos, rp, none);
      b.rope(k.view({D, sh.n_kv, T, 1}), pos, rp, none);
      b.kv_store(l.kc, l.vc, k, v, slots);
      b.attention(att, q, l.kc, l.vc, bt, seq, pos, ap);
      b.matmul(h, l.wo, att);
      b.add(x, x, h);
      b.rms_norm(h, x, l.fn, 1e-5f);
      b.matmul(g, l.wg, h);
      b.matmul(up, l.wu, h);
      b.silu_mul(g, g, up);
      b.matmul(h, l.wd, g);
      b.add(x, x, h);
    }
    b.rms_norm(h, x, onorm, 1e-5f);
    b.matmul(logits, emb, h);
    b.argmax(am, logits);
    if (!b.submit().ok()) std::exit(1);
  };
  step(0);  // warm-up: pipelines compiled, command buffer recorded
  const double t0 = now_s(), c0 = cpu_s();
  for (int s = 1; s <= steps; ++s) step(T == 1 ? s : 0);
  const double dt = (now_s() - t0) / steps, dc = (cpu_s() - c0) / steps;
  std::printf("{\"bench\":\"step\",\"model\":\"%s\",\"type\":\"%s\",\"T\":%d,\"ms_per_step\":%.3f,\"tok_per_s\":%.2f,"
              "\"cpu_ms_per_step\":%.3f}\n",
              model.c_str(), std::string(traits(wt).name).c_str(), T, dt * 1e3, T / dt, dc * 1e3);

  // Single matmuls: weight bytes streamed per second.
  const std::vector<std::pair<int, int>> mms =
      model == "k256" ? std::vector<std::pair<int, int>>{{1024, 1024}, {1024, 2816}, {2816, 1024}}
                      : std::vector<std::pair<int, int>>{{576, 192}, {576, 576}, {576, 1536}, {1536, 576}, {576, 49152}};
  for (auto [K, N] : mms) {
    if (model == "stories") break;
    auto w = mk(b, wt, {K, N, 1, 1}, rand_weights(wt, K, N, 5));
    auto xi = mk(b, dtype::f32, {K, T, 1, 1}), yo = mk(b, dtype::f32, {N, T, 1, 1});
    const int reps = 20;
    b.begin_step();
    b.matmul(yo, w, xi);
    (void)b.submit();
    const double s0 = now_s();
    for (int r = 0; r < reps; ++r) {
      b.begin_step();
      for (int i = 0; i < 4; ++i) b.matmul(yo, w, xi);
      (void)b.submit();
    }
    const double per = (now_s() - s0) / (reps * 4);
    std::printf("{\"bench\":\"matmul\",\"type\":\"%s\",\"K\":%d,\"N\":%d,\"T\":%d,\"us\":%.1f,\"GBps\":%.2f,\"GFLOPs\":%.2f}\n",
                std::string(traits(wt).name).c_str(), K, N, T, per * 1e6, static_cast<double>(w.nbytes()) / per / 1e9,
                2.0 * K * N * T / per / 1e9);
  }
  return 0;
}
