// Gated DeltaNet kernels (#23) against gpu/ref: the conv with its rolling state (ssm_conv),
// the delta rule (delta_net: GQA-style head tiling, sequences that restart, continue their
// slot's state or restore it from a checkpoint column, checkpoints taken mid-step, two steps
// in a row so the written state is read back) and sigmoid_mul. On the
// test's backend (its VKS_VK_TUNING) and, in the run without one, under gpu:4 and gpu:32 too
// (multi-token sequences run through the chunked kernel; the recurrent one too in that run). The chunked (WY) form,
// ref and vk, against the recurrent one at chunk edges (T = 1, 63, 64, 65, 129).
#include <cstdlib>
#include <string_view>

#include "gpu/ref/ref_recurrent.hpp"
#include "vk_fixture.hpp"

using namespace vks;
using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {

// recurrent_too: also the token-by-token delta_net kernel for multi-token sequences
// (vk_options::delta_chunk 0; every tuning's default is the chunked one).
template <class F>
void for_each_tuning(F&& fn, bool recurrent_too = false) {
  fn(*g_vk);
  if (std::getenv("VKS_VK_TUNING")) return;
  for (const char* t : {"gpu:4", "gpu:32", "recurrent"}) {
    if (std::string_view(t) == "recurrent" && !recurrent_too) continue;
    vk_options o;
    if (std::string_view(t) == "recurrent") o.delta_chunk = 0;
    else o.tuning = t;
    auto be = make_vk_backend(o);
    REQUIRE(be.ok());
    INFO("tuning " << t);
    fn(**be);
  }
}

// Three sequences of 5, 1 and 3 tokens in slots 2, 0 and 1 of 6: the first restarts and
// checkpoints its state after its third token into slot 3, the second continues its slot, the
// third restores from slot 4 and checkpoints after its second token into slot 5.
const std::vector<int32_t> k_info = {0, 5, 2, 1, 2, 2, 3, 0, 5, 1, 0, 0, 0, -1, 0, 0, 6, 3, 1, 0, 4, 7, 5, 0};
constexpr int64_t k_tokens = 9, k_slots = 6;

void check_conv(backend& vk) {
  pair_fixture f{make_ref_backend(), vk};
  for (int64_t Kc : {2, 4}) {
    const int64_t Cc = 96;
    INFO("Kc " << Kc);
    auto x = f.f32({Cc, k_tokens, 1, 1}, randn(size_t(Cc * k_tokens), 1));
    auto w = f.f32({Kc, Cc, 1, 1}, randn(size_t(Kc * Cc), 2, 0.5f));
    auto st = f.f32({(Kc - 1) * Cc, k_slots, 1, 1}, randn(size_t((Kc - 1) * Cc * k_slots), 3));
    auto info = f.i32({8, 3, 1, 1}, k_info);
    auto y = f.make2(dtype::f32, {Cc, k_tokens, 1, 1});
    for (int step = 0; step < 2; ++step) {
      f.run([&](backend& b, bool is_vk) { b.ssm_conv(PICK(y), PICK(x), PICK(w), PICK(st), PICK(info)); });
      CHECK(f.err(y) < 1e-5);
      CHECK(f.err(st) < 1e-6);
    }
  }
}

void check_delta(backend& vk) {
  pair_fixture f{make_ref_backend(), vk};
  for (int S : {32, 64, 128}) {
    const delta_net_params p{2, 4, S, 1e-6f};
    const int64_t Hv = p.n_v_heads, Cc = (2 * p.n_k_heads + Hv) * S;
    INFO("S " << S);
    auto qkv = f.f32({Cc, k_tokens, 1, 1}, randn(size_t(Cc * k_tokens), uint32_t(S)));
    auto beta = f.f32({Hv, k_tokens, 1, 1}, randn(size_t(Hv * k_tokens), 5));
    auto alpha = f.f32({Hv, k_tokens, 1, 1}, randn(size_t(Hv * k_tokens), 6));
    auto dt = f.f32({Hv, 1, 1, 1}, randn(size_t(Hv), 7, 0.5f));
    auto a = f.f32({Hv, 1, 1, 1}, {-0.1f, -0.5f, -1.f, -0.05f});
    auto st = f.f32({int64_t{S} * S * Hv, k_slots, 1, 1}, randn(size_t(S * S * Hv * k_slots), 8, 0.1f));
    auto info = f.i32({8, 3, 1, 1}, k_info);
    auto out = f.make2(dtype::f32, {Hv * S, k_tokens, 1, 1});
    for (int step = 0; step < 2; ++step) {
      f.run([&](backend& b, bool is_vk) {
        b.delta_net(PICK(out), PICK(qkv), PICK(beta), PICK(alpha), PICK(dt), PICK(a), PICK(st), PICK(info), p);
      });
      CHECK(f.err(out, 1e-4) < 1e-4);
      CHECK(f.err(st, 1e-4) < 1e-4);
    }
  }
}

// One sequence of T tokens continuing a prior state in slot 0 (checkpoint after token ck_t into
// slot 1 unless -1): its outputs and states.
struct delta_case {
  int64_t T, S, ck_t;
  delta_net_params p() const { return {2, 4, int(S), 1e-6f}; }
  int64_t Cc() const { return (2 * 2 + 4) * S; }
  std::vector<float> qkv() const { return randn(size_t(Cc() * T), uint32_t(T + S)); }
  std::vector<float> beta() const { return randn(size_t(4 * T), 5); }
  std::vector<float> alpha() const { return randn(size_t(4 * T), 6, 0.5f); }
  std::vector<float> dt() const { return randn(4, 7, 0.5f); }
  std::vector<float> a() const { return {-0.1f, -0.5f, -1.f, -0.02f}; }
  std::vector<float> state() const { return randn(size_t(S * S * 4 * 2), 8, 0.1f); }
  std::vector<int32_t> info() const { return {0, int32_t(T), 0, 0, 0, int32_t(ck_t), 1, 0}; }
};

// ref's chunked twin equals ref's recurrent form (chunks 16 and 64: edges inside and at T).
void check_ref_chunked(const delta_case& c) {
  const auto qkv = c.qkv(), beta = c.beta(), alpha = c.alpha(), dt = c.dt(), a = c.a();
  const auto info = c.info();
  std::vector<float> st0 = c.state(), o0(size_t(4 * c.S * c.T));
  ref::delta_net(o0.data(), qkv.data(), beta.data(), alpha.data(), dt.data(), a.data(), st0.data(), info.data(), 1,
                 c.p());
  for (int64_t chunk : {16, 64}) {
    INFO("chunk " << chunk);
    std::vector<float> st1 = c.state(), o1(o0.size());
    ref::delta_net_chunked(o1.data(), qkv.data(), beta.data(), alpha.data(), dt.data(), a.data(), st1.data(),
                           info.data(), 1, c.p(), chunk);
    CHECK(rel_err(o1, o0, 1e-4) < 1e-5);
    CHECK(rel_err(st1, st0, 1e-4) < 1e-5);
  }
}

// vk (the chunked kernel) against ref's recurrent form.
void check_vk_chunked(backend& vk, const delta_case& c) {
  pair_fixture f{make_ref_backend(), vk};
  const int64_t S = c.S, T = c.T;
  auto qkv = f.f32({c.Cc(), T, 1, 1}, c.qkv());
  auto beta = f.f32({4, T, 1, 1}, c.beta());
  auto alpha = f.f32({4, T, 1, 1}, c.alpha());
  auto dt = f.f32({4, 1, 1, 1}, c.dt());
  auto a = f.f32({4, 1, 1, 1}, c.a());
  auto st = f.f32({S * S * 4, 2, 1, 1}, c.state());
  auto info = f.i32({8, 1, 1, 1}, c.info());
  auto out = f.make2(dtype::f32, {4 * S, T, 1, 1});
  f.run([&](backend& b, bool is_vk) {
    b.delta_net(PICK(out), PICK(qkv), PICK(beta), PICK(alpha), PICK(dt), PICK(a), PICK(st), PICK(info), c.p());
  });
  CHECK(f.err(out, 1e-4) < 1e-4);
  CHECK(f.err(st, 1e-4) < 1e-4);
}

const delta_case k_chunk_cases[] = {{1, 32, -1},  {63, 32, -1}, {64, 32, 40}, {65, 32, -1},
                                    {129, 32, 70}, {65, 128, 33}, {129, 64, -1}};

}  // namespace

TEST_CASE("chunked delta_net (WY form) equals the recurrent one at chunk edges", "[vk][recurrent]") {
  for (const delta_case& c : k_chunk_cases) {
    INFO("T " << c.T << " S " << c.S << " ck_t " << c.ck_t);
    check_ref_chunked(c);
  }
  for_each_tuning([](backend& vk) {  // the test's tuning, gpu:4 and gpu:32 (the chunked kernel)
    for (const delta_case& c : k_chunk_cases) {
      INFO("vk " << vk.info().name << ", T " << c.T << " S " << c.S << " ck_t " << c.ck_t);
      check_vk_chunked(vk, c);
    }
  });
}

TEST_CASE("ssm_conv matches the reference (rolling state, restarts)", "[vk][recurrent]") { for_each_tuning(check_conv); }

TEST_CASE("delta_net matches the reference (heads, slots, restarts, two steps)", "[vk][recurrent]") {
  for_each_tuning(check_delta, true);
}

TEST_CASE("sigmoid_mul matches the reference", "[vk][recurrent]") {
  pair_fixture f{make_ref_backend(), *g_vk};
  const int64_t n = 1000;
  auto g = f.f32({n, 1, 1, 1}, randn(size_t(n), 1, 3.f)), x = f.f32({n, 1, 1, 1}, randn(size_t(n), 2));
  auto y = f.make2(dtype::f32, {n, 1, 1, 1});
  f.run([&](backend& b, bool is_vk) { b.sigmoid_mul(PICK(y), PICK(g), PICK(x)); });
  CHECK(f.err(y) < 1e-5);
}

// One gate per row (the shared expert's gate of qwen35moe / qwen3next), in place as the layer runs it.
TEST_CASE("sigmoid_mul with one gate per row matches the reference", "[vk][recurrent]") {
  pair_fixture f{make_ref_backend(), *g_vk};
  const int64_t F = 96, T = 7;
  auto g = f.f32({1, T, 1, 1}, randn(size_t(T), 3, 3.f)), x = f.f32({F, T, 1, 1}, randn(size_t(F * T), 4));
  f.run([&](backend& b, bool is_vk) { b.sigmoid_mul(PICK(x), PICK(g), PICK(x)); });
  CHECK(f.err(x) < 1e-5);
}
