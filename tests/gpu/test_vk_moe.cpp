// Mixture-of-experts kernels (#22) against gpu/ref: the router (moe_route: both gatings,
// normalised or not, ties and NaN), the grouped expert matvec (matmul_id, matmul_id_swiglu:
// every weight type, x shared by a token's slots or per row, rows that pick different
// experts) and the weighted combine. They run on the test's backend (its VKS_VK_TUNING) and,
// in the run without one, also under the GPU tilings of 4, 8, 16 and 32 lanes per row.
#include <cmath>
#include <cstdlib>
#include <limits>

#include "moe_epilogue.hpp"
#include "vk_fixture.hpp"

using namespace vks;
using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {

// fn(backend&, full) on the shared backend (full = true), then (no VKS_VK_TUNING set) on fresh
// ones per extra tiling with full = false: fewer weight types there (their pipelines compile
// per backend), the tiling being what differs.
template <class F>
void for_each_tuning(F&& fn) {
  {
    INFO("shared backend");
    fn(*g_vk, true);
  }
  if (std::getenv("VKS_VK_TUNING")) return;
  for (const char* t : {"gpu:4", "gpu:8", "gpu:16", "gpu:32"}) {
    vk_options o;
    o.tuning = t;
    auto be = make_vk_backend(o);
    REQUIRE(be.ok());
    INFO("tuning " << t);
    fn(**be, false);
  }
}

std::vector<int32_t> random_ids(size_t n, int E, uint32_t seed) {
  std::vector<int32_t> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(E));
  }
  return v;
}

void check_route(backend& vk, bool) {
  pair_fixture f{make_ref_backend(), vk};
  for (int E : {8, 32, 128})
    for (int k : {1, 2, 4, 8})
      for (int64_t T : {1, 5, 70})
        for (auto g : {moe_gating::softmax, moe_gating::softmax_selected})
          for (bool norm : {false, true}) {
            INFO("E " << E << " k " << k << " T " << T << " gating " << int(g) << " norm " << norm);
            auto l = randn(size_t(E * T), uint32_t(E + k + T), 2.f);
            for (int64_t t = 0; t < T; t += 3) {  // ties (the lower id first) and a NaN in some rows
              l[size_t(t * E + 1)] = l[size_t(t * E + 4)];
              if (t % 2 == 0) l[size_t(t * E + 2)] = std::numeric_limits<float>::quiet_NaN();
            }
            auto logits = f.f32({E, T, 1, 1}, l);
            auto ids = f.make2(dtype::i32, {k, T, 1, 1}), w = f.make2(dtype::f32, {k, T, 1, 1});
            const moe_route_params p{k, g, norm, norm ? 2.5f : 0.f};
            f.run([&](backend& b, bool is_vk) { b.moe_route(PICK(ids), PICK(w), PICK(logits), p); });
            CHECK(read_i32(vk, ids.v) == read_i32(*f.ref, ids.r));
            CHECK(f.err(w) < 1e-5);
          }
}

void check_matmul_id(backend& vk, bool full) {
  pair_fixture f{make_ref_backend(), vk};
  const dtype types[] = {dtype::f32,  dtype::f16,  dtype::bf16, dtype::q8_0, dtype::q4_0, dtype::q4_K, dtype::q6_K,
                         dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q2_K, dtype::q3_K, dtype::q5_K, dtype::iq4_nl,
                         dtype::iq4_xs, dtype::mxfp4};
  const int E = 8, k = 2;
  for (dtype t : types) {
    if (!full && t != dtype::f32 && t != dtype::q8_0 && t != dtype::q4_K && t != dtype::mxfp4) continue;
    const int64_t K = traits(t).block_elems == 256 ? 256 : 96, N = 34;  // N: ragged against every tile
    auto w = f.make2(t, {K, N, E, 1}, encode(t, randn(size_t(K * N * E), 7), K));
    auto wsw = f.make2(t, {K, 2 * N, E, 1}, encode(t, randn(size_t(K * 2 * N * E), 8), K));
    for (int64_t T : {1, 3, 9}) {
      const int64_t R = k * T;
      auto ids = f.i32({k, T, 1, 1}, random_ids(size_t(R), E, uint32_t(T)));
      auto xs = f.f32({K, T, 1, 1}, randn(size_t(K * T), uint32_t(T + 1)));   // shared by a token's slots
      auto xr = f.f32({K, R, 1, 1}, randn(size_t(K * R), uint32_t(T + 2)));   // one row per slot
      for (bool shared : {true, false}) {
        INFO("type " << traits(t).name << " T " << T << " x " << (shared ? "shared" : "per row"));
        const twin& x = shared ? xs : xr;
        auto y = f.make2(dtype::f32, {N, R, 1, 1}), ysw = f.make2(dtype::f32, {N, R, 1, 1});
        f.run([&](backend& b, bool is_vk) {
          b.matmul_id(PICK(y), PICK(w), PICK(x), PICK(ids));
          b.matmul_id_swiglu(PICK(ysw), PICK(wsw), PICK(x), PICK(ids));
        });
        CHECK(f.err(y) < 1e-5);
        CHECK(f.err(ysw) < 1e-5);
      }
    }
  }
}

void check_combine(backend& vk, bool) {
  pair_fixture f{make_ref_backend(), vk};
  for (int k : {1, 2, 8})
    for (int64_t T : {1, 7}) {
      const int64_t C = 96;
      auto x = f.f32({C, k * T, 1, 1}, randn(size_t(C * k * T), uint32_t(k)));
      auto w = f.f32({k, T, 1, 1}, randn(size_t(k * T), uint32_t(T)));
      auto y = f.make2(dtype::f32, {C, T, 1, 1});
      f.run([&](backend& b, bool is_vk) { b.moe_combine(PICK(y), PICK(x), PICK(w)); });
      CHECK(f.err(y) < 1e-6);
    }
}

// gpt-oss's FFN pieces: per-expert biases (add_id, in place as the layer runs it) and the
// clamped SwiGLU, inputs of std 6 so that some gates and ups pass the limit of 7.
void check_oai(backend& vk, bool) {
  pair_fixture f{make_ref_backend(), vk};
  const int E = 8, k = 4;
  for (int64_t T : {1, 5}) {
    const int64_t F = 40, R = k * T;
    INFO("T " << T);
    auto ids = f.i32({k, T, 1, 1}, random_ids(size_t(R), E, uint32_t(T + 3)));
    auto b = f.f32({2 * F, E, 1, 1}, randn(size_t(2 * F * E), 5));
    auto x = f.f32({2 * F, R, 1, 1}, randn(size_t(2 * F * R), uint32_t(T), 6.f));
    auto y = f.make2(dtype::f32, {F, R, 1, 1});
    f.run([&](backend& bk, bool is_vk) {
      bk.add_id(PICK(x), PICK(x), PICK(b), PICK(ids));
      bk.swiglu_oai(PICK(y), PICK(x), 1.702f, 7.f);
    });
    CHECK(f.err(x) < 1e-6);
    CHECK(f.err(y) < 1e-5);
  }
}

// gpt-oss's fused expert epilogues (matvec_id's output stage: each row adds its expert's bias
// column; the SwiGLU mode with the clamped activation) against the ref composition
// (moe_epilogue.hpp), K = 96 for 32-wide blocks (256 for k-quants), 4 experts a token.
void check_fused_bias(backend& vk, bool full) {
  pair_fixture f{make_ref_backend(), vk};
  const int E = 8, k = 4;
  for (dtype t : {dtype::f32, dtype::q8_0, dtype::mxfp4, dtype::q4_K}) {
    if (!full && t != dtype::mxfp4) continue;
    const int64_t K = traits(t).block_elems == 256 ? 256 : 96;
    for (int64_t T : {1, 5}) {
      INFO("type " << traits(t).name << " T " << T);
      check_expert_epilogues(f, t, K, random_ids(size_t(k * T), E, uint32_t(T + 7)), T, 17);
    }
  }
}

}  // namespace

TEST_CASE("vk matmul_id_bias and matmul_id_swiglu_oai (gpt-oss's fused epilogues) match ref", "[vk][moe]") {
  for_each_tuning(check_fused_bias);
}

TEST_CASE("vk add_id and swiglu_oai (gpt-oss) match ref", "[vk][moe]") { for_each_tuning(check_oai); }

TEST_CASE("vk moe_route matches ref: both gatings, normalised, ties by lower id, NaN", "[vk][moe]") {
  for_each_tuning(check_route);
}

TEST_CASE("vk matmul_id and matmul_id_swiglu match ref for every weight type", "[vk][moe]") {
  for_each_tuning(check_matmul_id);
}

TEST_CASE("vk moe_combine matches ref", "[vk][moe]") { for_each_tuning(check_combine); }

TEST_CASE("ref moe_route: softmax over all experts, normalised; softmax over the chosen", "[vk][moe]") {
  auto be = make_ref_backend();
  const std::vector<float> l = {0.f, 2.f, 1.f, 2.f};  // the tie 1/3 goes to id 1 first
  auto logits = make(*be, dtype::f32, {4, 1, 1, 1}, as_bytes(l));
  auto ids = make(*be, dtype::i32, {2, 1, 1, 1}, {}), w = make(*be, dtype::f32, {2, 1, 1, 1}, {});
  be->begin_step();
  be->moe_route(ids, w, logits, {2, moe_gating::softmax, false, 0.f});
  REQUIRE(be->submit().ok());
  CHECK(read_i32(*be, ids) == std::vector<int32_t>{1, 3});
  const double z = 1 + 2 * std::exp(2.0) + std::exp(1.0);
  CHECK(read_f32(*be, w)[0] == Approx(std::exp(2.0) / z));
  be->begin_step();
  be->moe_route(ids, w, logits, {2, moe_gating::softmax, true, 0.f});
  REQUIRE(be->submit().ok());
  CHECK(read_f32(*be, w)[0] == Approx(0.5));
  be->begin_step();
  be->moe_route(ids, w, logits, {2, moe_gating::softmax_selected, false, 0.f});
  REQUIRE(be->submit().ok());
  CHECK(read_f32(*be, w)[1] == Approx(0.5));
}

TEST_CASE("vk matmul_id over an expert stack larger than one storage binding", "[vk][moe][big]") {
  // 544 f32 experts of 256 x 256 (136 MiB): more than lavapipe's 128 MiB maxStorageBufferRange,
  // so the stack is multiplied in windows of whole experts; the rows pick experts in each.
  const int64_t K = 256, N = 256, E = 544, T = 3, k = 2;
  std::vector<float> wv(size_t(K * N * E));
  uint32_t s = 12345;
  for (auto& v : wv) {
    s = s * 1664525u + 1013904223u;
    v = (static_cast<float>(s >> 8) / 16777216.f - 0.5f) * 0.2f;
  }
  pair_fixture f;
  auto w = f.make2(dtype::f32, {K, N, E, 1}, as_bytes(wv));
  wv = {};
  auto ids = f.i32({k, T, 1, 1}, {3, 543, 270, 1, 542, 400});
  auto x = f.f32({K, T, 1, 1}, randn(size_t(K * T), 5));
  auto y = f.make2(dtype::f32, {N, k * T, 1, 1});
  f.run([&](backend& b, bool is_vk) { b.matmul_id(PICK(y), PICK(w), PICK(x), PICK(ids)); });
  CHECK(f.err(y) < 1e-5);
}

TEST_CASE("vk matmul_id with more (token, slot) rows than one grid column holds", "[vk][moe]") {
  // 2 x 32800 rows > 65535 (maxComputeWorkGroupCount[1] on lavapipe): chunks of whole tokens.
  const int64_t K = 32, N = 8, E = 4, k = 2, T = 32800;
  pair_fixture f;
  auto w = f.make2(dtype::f32, {K, N, E, 1}, as_bytes(randn(size_t(K * N * E), 3)));
  auto ids = f.i32({k, T, 1, 1}, random_ids(size_t(k * T), int(E), 9));
  auto xs = f.f32({K, T, 1, 1}, randn(size_t(K * T), 4));
  auto xr = f.f32({K, k * T, 1, 1}, randn(size_t(K * k * T), 6));
  auto y = f.make2(dtype::f32, {N, k * T, 1, 1}), y2 = f.make2(dtype::f32, {N, k * T, 1, 1});
  f.run([&](backend& b, bool is_vk) {
    b.matmul_id(PICK(y), PICK(w), PICK(xs), PICK(ids));
    b.matmul_id(PICK(y2), PICK(w), PICK(xr), PICK(ids));
  });
  CHECK(f.err(y) < 1e-5);
  CHECK(f.err(y2) < 1e-5);
}
