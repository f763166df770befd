// The gathered expert GEMM (#20, #22: moe/moe_gather.comp + matmul/gemm.comp MUL_MAT_ID), which
// matmul_id and matmul_id_swiglu use for more than 8 tokens on GPU tunings, against gpu/ref:
// token counts straddling its tiles (9, 63-65, 127-129) with 8 experts top-2, random and
// skewed routing (one expert taking most rows, experts left empty), experts given exactly
// 63-65 and 127-129 rows (64-row tiles) or 31-33 and 63-65 (32-row tiles), every expert weight type
// the families use (f16, q8_0, q4_K, mxfp4), x shared by a token's slots or per row, and the
// chunked / windowed dispatches (a lowered grid height and storage range); gpt-oss's epilogue
// (per-expert bias columns, the clamped SwiGLU) on the same tiles. On the test's
// backend when VKS_VK_TUNING is set (gpu and gpu:64 in CI; the cpu runs check the matvec path
// on the same shapes), else on fresh gpu:4 and gpu:32 backends.
#include <cstdlib>

#include "moe_epilogue.hpp"
#include "vk_fixture.hpp"

using namespace vks;
using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {

// Expert ids for R rows: uniform over E, or (skewed) 7 rows in 8 on expert 5 and the rest on
// experts 0-2 (experts 3, 4, 6 and 7 get none).
std::vector<int32_t> route_ids(size_t R, int E, bool skewed, uint32_t seed) {
  std::vector<int32_t> v(R);
  uint32_t s = seed * 2654435761u + 7;
  for (size_t r = 0; r < R; ++r) {
    s = s * 1664525u + 1013904223u;
    v[r] = skewed ? (r % 8 != 0 ? 5 : static_cast<int32_t>((s >> 8) % 3)) : static_cast<int32_t>((s >> 8) % uint32_t(E));
  }
  return v;
}

// Expert ids giving expert e exactly counts[e] rows, in a shuffled order.
std::vector<int32_t> exact_ids(const std::vector<int>& counts, uint32_t seed) {
  std::vector<int32_t> v;
  for (size_t e = 0; e < counts.size(); ++e) v.insert(v.end(), size_t(counts[e]), int32_t(e));
  uint32_t s = seed;
  for (size_t i = v.size(); i > 1; --i) {
    s = s * 1664525u + 1013904223u;
    std::swap(v[i - 1], v[(s >> 8) % i]);
  }
  return v;
}

// One matmul_id and one matmul_id_swiglu of w / wsw with these ids (R = k*T rows).
void check_once(pair_fixture& f, const twin& w, const twin& wsw, const std::vector<int32_t>& idv, int64_t T, bool per_row_x) {
  const int64_t K = w.r.ne[0], N = w.r.ne[1], k = int64_t(idv.size()) / T, R = k * T;
  auto ids = f.i32({k, T, 1, 1}, idv);
  auto x = per_row_x ? f.f32({K, R, 1, 1}, randn(size_t(K * R), uint32_t(T + 2)))
                     : f.f32({K, T, 1, 1}, randn(size_t(K * T), uint32_t(T + 1)));
  auto y = f.make2(dtype::f32, {N, R, 1, 1}), ysw = f.make2(dtype::f32, {N, R, 1, 1});
  f.run([&](backend& b, bool is_vk) {
    b.matmul_id(PICK(y), PICK(w), PICK(x), PICK(ids));
    b.matmul_id_swiglu(PICK(ysw), PICK(wsw), PICK(x), PICK(ids));
  });
  CHECK(f.err(y) < 1e-5);
  CHECK(f.err(ysw) < 1e-5);
}

// matmul_id and matmul_id_swiglu (F = 34: ragged against the 64-row and 32-feature tiles) of
// type t for each token count, both routings; exact: the per-expert row counts at both tile
// sizes' edges (578 rows: 64-row tiles; 256 rows: 32-row tiles).
void check_type(pair_fixture& f, dtype t, std::initializer_list<int64_t> tokens, bool per_row_x, bool exact = false) {
  const int E = 8, k = 2;
  const int64_t K = 256, N = 34;
  auto w = f.make2(t, {K, N, E, 1}, encode(t, randn(size_t(K * N * E), 11), K));
  auto wsw = f.make2(t, {K, 2 * N, E, 1}, encode(t, randn(size_t(K * 2 * N * E), 12), K));
  for (int64_t T : tokens)
    for (bool skewed : {false, true}) {
      INFO("type " << traits(t).name << " T " << T << (skewed ? " skewed" : " uniform"));
      check_once(f, w, wsw, route_ids(size_t(k * T), E, skewed, uint32_t(T)), T, per_row_x);
    }
  if (!exact) return;
  INFO("type " << traits(t).name << " exact counts");
  check_once(f, w, wsw, exact_ids({63, 64, 65, 127, 128, 129, 0, 2}, 5), 289, per_row_x);
  check_once(f, w, wsw, exact_ids({31, 32, 33, 0, 63, 64, 1, 32}, 6), 128, per_row_x);
}

void check_gemm_id(backend& vk) {
  pair_fixture f{make_ref_backend(), vk};
  check_type(f, dtype::q4_K, {9, 63, 64, 65, 127, 128, 129}, false, true);
  check_type(f, dtype::q8_0, {9, 65, 129}, true, true);
  check_type(f, dtype::f16, {9, 65, 129}, false);
  check_type(f, dtype::mxfp4, {9, 65, 129}, false);
  for (int64_t T : {9, 65}) {
    INFO("epilogue T " << T);
    check_expert_epilogues(f, dtype::mxfp4, 256, route_ids(size_t(4 * T), 8, T == 65, uint32_t(T)), T, 31);
  }
  INFO("epilogue exact counts");
  check_expert_epilogues(f, dtype::q8_0, 256, exact_ids({63, 64, 65, 127, 128, 129, 0, 2}, 7), 289, 31);
}

template <class F>
void on_tunings(F&& fn) {
  if (std::getenv("VKS_VK_TUNING")) {
    fn(*g_vk);
    return;
  }
  for (const char* t : {"gpu:4", "gpu:32"}) {
    vk_options o;
    o.tuning = t;
    auto be = make_vk_backend(o);
    REQUIRE(be.ok());
    INFO("tuning " << t);
    fn(**be);
  }
}

}  // namespace

TEST_CASE("vk gathered expert GEMM matches ref across tile edges, routings and weight types", "[vk][moe][gemm_id]") {
  on_tunings(check_gemm_id);
}

TEST_CASE("vk gathered expert GEMM in chunks of tokens and windows of experts", "[vk][moe][gemm_id]") {
  // A 64 KiB storage range holds one f16 expert of 256 x 64 (32 KiB) per window, and a grid
  // of 9 rows makes the route tables chunks of 32 rows (16 tokens: 1 + 8 tiles).
  vk_options o;
  o.tuning = "gpu";
  o.max_storage_range = 64 << 10;
  o.max_groups_y = 9;
  auto be = make_vk_backend(o);
  REQUIRE(be.ok());
  pair_fixture f{make_ref_backend(), **be};
  const int64_t K = 256, N = 64, E = 8, k = 2, T = 33;
  auto w = f.make2(dtype::f16, {K, N, E, 1}, encode(dtype::f16, randn(size_t(K * N * E), 21), K));
  auto ids = f.i32({k, T, 1, 1}, route_ids(size_t(k * T), int(E), true, 3));
  auto x = f.f32({K, T, 1, 1}, randn(size_t(K * T), 4));
  auto y = f.make2(dtype::f32, {N, k * T, 1, 1}), ysw = f.make2(dtype::f32, {N / 2, k * T, 1, 1});
  f.run([&](backend& b, bool is_vk) {
    b.matmul_id(PICK(y), PICK(w), PICK(x), PICK(ids));
    b.matmul_id_swiglu(PICK(ysw), PICK(w), PICK(x), PICK(ids));
  });
  CHECK(f.err(y) < 1e-5);
  CHECK(f.err(ysw) < 1e-5);
}
