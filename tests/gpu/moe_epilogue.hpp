// gpt-oss's fused expert epilogues against gpu/ref's compositions, shared by the expert matvec
// tests (test_vk_moe.cpp) and the gathered expert GEMM's (test_vk_moe_gemm.cpp):
// matmul_id_swiglu_oai (the clamped SwiGLU over biased gate and up rows; biases of std 3 and
// weights of std 1 put many gates and ups past the limit of 7) and matmul_id_bias (each row
// adds its expert's bias column, x one row per slot as down's input).
#pragma once

#include "vk_fixture.hpp"

namespace vks::gpu::test {

// Weights of type t {K, 34, E} (and {K, 68, E} stacked gate/up), E = 8, routed by idv (k ids
// per token, T tokens); seed varies the data.
inline void check_expert_epilogues(pair_fixture& f, dtype t, int64_t K, const std::vector<int32_t>& idv, int64_t T,
                                   uint32_t seed) {
  const int64_t E = 8, N = 34, k = int64_t(idv.size()) / T, R = k * T;
  auto w = f.make2(t, {K, N, E, 1}, encode(t, randn(size_t(K * N * E), seed), K));
  auto wsw = f.make2(t, {K, 2 * N, E, 1}, encode(t, randn(size_t(K * 2 * N * E), seed + 1), K));
  auto b = f.f32({N, E, 1, 1}, randn(size_t(N * E), seed + 2, 3.f));
  auto bsw = f.f32({2 * N, E, 1, 1}, randn(size_t(2 * N * E), seed + 3, 3.f));
  auto ids = f.i32({k, T, 1, 1}, idv);
  auto x = f.f32({K, T, 1, 1}, randn(size_t(K * T), uint32_t(T) + seed + 4));   // shared by a token's slots
  auto xr = f.f32({K, R, 1, 1}, randn(size_t(K * R), uint32_t(T) + seed + 5));  // down's input: one row per slot
  auto y = f.make2(dtype::f32, {N, R, 1, 1}), ysw = f.make2(dtype::f32, {N, R, 1, 1});
  auto scratch = f.make2(dtype::f32, {2 * N, R, 1, 1});
  f.run([&](backend& bk, bool is_vk) {
    bk.matmul_id_swiglu_oai(PICK(ysw), PICK(wsw), PICK(x), PICK(ids), PICK(bsw), 1.702f, 7.f, PICK(scratch));
    bk.matmul_id_bias(PICK(y), PICK(w), PICK(xr), PICK(ids), PICK(b));
  });
  CHECK(f.err(ysw) < 1e-5);
  CHECK(f.err(y) < 1e-5);
}

}  // namespace vks::gpu::test
