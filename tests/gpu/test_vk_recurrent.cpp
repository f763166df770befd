// Gated DeltaNet kernels (#23) against gpu/ref: the conv with its rolling state (ssm_conv),
// the delta rule (delta_net: GQA-style head tiling, sequences that restart, continue their
// slot's state or restore it from a checkpoint column, checkpoints taken mid-step, two steps
// in a row so the written state is read back) and sigmoid_mul. On the
// test's backend (its VKS_VK_TUNING) and, in the run without one, under gpu:4 and gpu:32 too.
#include <cstdlib>

#include "vk_fixture.hpp"

using namespace vks;
using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {

template <class F>
void for_each_tuning(F&& fn) {
  fn(*g_vk);
  if (std::getenv("VKS_VK_TUNING")) return;
  for (const char* t : {"gpu:4", "gpu:32"}) {
    vk_options o;
    o.tuning = t;
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

}  // namespace

TEST_CASE("ssm_conv matches the reference (rolling state, restarts)", "[vk][recurrent]") { for_each_tuning(check_conv); }

TEST_CASE("delta_net matches the reference (heads, slots, restarts, two steps)", "[vk][recurrent]") {
  for_each_tuning(check_delta);
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
