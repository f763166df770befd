// The gathered expert GEMM (#20, #22: moe/moe_gather.comp + matmul/gemm.comp MUL_MAT_ID), which
// matmul_id and matmul_id_swiglu use for more than 8 tokens on GPU tunings, against gpu/ref:
// token counts straddling its 64-row tiles (9, 63-65, 127-129) with 8 experts top-2, random and
// skewed routing (one expert taking most rows, experts left empty), every expert weight type
// the families use (f16, q8_0, q4_K, mxfp4), x shared by a token's slots or per row, and the
// chunked / windowed dispatches (a lowered grid height and storage range). On the test's
// backend when VKS_VK_TUNING is set (gpu and gpu:64 in CI; the cpu runs check the matvec path
// on the same shapes), else on fresh gpu:4 and gpu:32 backends.
#include <cstdlib>

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

// matmul_id and matmul_id_swiglu (F = 34: ragged against the 64-row and 32-feature tiles) of
// type t for each token count, both routings.
void check_type(pair_fixture& f, dtype t, std::initializer_list<int64_t> tokens, bool per_row_x) {
  const int E = 8, k = 2;
  const int64_t K = 256, N = 34;
  auto w = f.make2(t, {K, N, E, 1}, encode(t, randn(size_t(K * N * E), 11), K));
  auto wsw = f.make2(t, {K, 2 * N, E, 1}, encode(t, randn(size_t(K * 2 * N * E), 12), K));
  for (int64_t T : tokens)
    for (bool skewed : {false, true}) {
      const int64_t R = k * T;
      INFO("type " << traits(t).name << " T " << T << (skewed ? " skewed" : " uniform"));
      auto ids = f.i32({k, T, 1, 1}, route_ids(size_t(R), E, skewed, uint32_t(T)));
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
}

void check_gemm_id(backend& vk) {
  pair_fixture f{make_ref_backend(), vk};
  check_type(f, dtype::q4_K, {9, 63, 64, 65, 127, 128, 129}, false);
  check_type(f, dtype::q8_0, {9, 65, 129}, true);
  check_type(f, dtype::f16, {9, 65, 129}, false);
  check_type(f, dtype::mxfp4, {9, 65, 129}, false);
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
