// The decode matvec (T <= 8 columns, #20) against gpu/ref for the weight types decode cares
// most about: every column count 1..9 (9: a second column tile), K across the lanes' block
// stride (fewer blocks than lanes, a ragged last round, many rounds) and N across the rows
// of a workgroup, plain and fused (norm prologue + SwiGLU, residual add). Meson runs it under
// gpu:4 (lane groups smaller than lavapipe's subgroup: shared-memory reduction), gpu:8/16/32/64
// (subgroupAdd, one or several subgroups per row), gpu:32:smem (shared memory only) and cpu.
// Under the q8_1 tunings (gpu:N:q8, gpu:N:q8i: matvec_q8_1.comp) the reference is gpu/ref's
// q8_1 twin (ref_q8_1.hpp), and q4_1 / q5_0 / q5_1 join the types.
#include "vk_fixture.hpp"

using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {
const dtype k_decode_types[] = {dtype::f16, dtype::q8_0, dtype::q4_0, dtype::q4_K, dtype::q5_K, dtype::q6_K};
const dtype k_q8_extra_types[] = {dtype::q4_1, dtype::q5_0, dtype::q5_1};

// Whether the vk backend quantizes activations to q8_1 (gpu:N:q8 / :q8i, or a GPU's own row
// with integer dot products); pair_fixture then compares against gpu/ref's q8_1 twin.
bool q8_tuning() { return g_vk->info().q8_1_activations; }
// The decode types of this run (the q8_1 runs add the other integer-dot types).
std::vector<dtype> decode_types() {
  std::vector<dtype> v(std::begin(k_decode_types), std::end(k_decode_types));
  if (q8_tuning()) v.insert(v.end(), std::begin(k_q8_extra_types), std::end(k_q8_extra_types));
  return v;
}

std::vector<float> scaled(std::vector<float> v, float s) {
  for (auto& x : v) x *= s;
  return v;
}
}  // namespace

TEST_CASE("vk decode matvec: T 1..9, K across the lanes' block stride, N across workgroup rows", "[vk][matvec]") {
  pair_fixture f;
  for (dtype t : decode_types()) {
    const bool kq = traits(t).block_elems == 256;
    // Blocks of 32 per row: 3 / 33 (32-element types), 8 / 72 (K-quants).
    const std::vector<int64_t> ks = kq ? std::vector<int64_t>{256, 2304} : std::vector<int64_t>{96, 1056};
    for (int64_t K : ks)
      for (int64_t N : {1, 17, 33}) {
        auto w = f.make2(t, {K, N, 1, 1}, encode(t, randn(size_t(K * N), uint32_t(K + N)), K));
        for (int64_t T = 1; T <= 9; ++T) {
          INFO("type " << traits(t).name << " K " << K << " N " << N << " T " << T);
          auto x = f.f32({K, T, 1, 1}, randn(size_t(K * T), uint32_t(T + 7)));
          auto y = f.make2(dtype::f32, {N, T, 1, 1});
          f.run([&](backend& b, bool is_vk) { b.matmul(PICK(y), PICK(w), PICK(x)); });
          CHECK(f.err(y) < 1e-5);
        }
      }
  }
}

TEST_CASE("vk decode matvec fused modes at T 1..9: norm + SwiGLU, residual add", "[vk][matvec]") {
  pair_fixture f;
  // q8_1: the norm's sum of squares (reduced in another order) may move a quant by one step.
  const double tol = q8_tuning() ? 2e-3 : 1e-5;
  for (dtype t : {dtype::q4_K, dtype::q8_0}) {
    const int64_t K = traits(t).block_elems == 256 ? 768 : 1056, F = 9, N = 17;
    auto g = f.f32({K, 1, 1, 1}, randn(size_t(K), 9));
    auto wgu = f.make2(t, {K, 2 * F, 1, 1}, encode(t, randn(size_t(K * 2 * F), 3), K));
    auto wo = f.make2(t, {K, N, 1, 1}, encode(t, randn(size_t(K * N), 4), K));
    for (int64_t T = 1; T <= 9; ++T) {
      INFO("type " << traits(t).name << " T " << T);
      auto x = f.f32({K, T, 1, 1}, scaled(randn(size_t(K * T), uint32_t(T + 3)), 0.25f));
      auto h = f.make2(dtype::f32, {K, T, 1, 1});
      auto y = f.make2(dtype::f32, {F, T, 1, 1}), scratch = f.make2(dtype::f32, {F, T, 1, 1});
      auto acc = f.f32({N, T, 1, 1}, randn(size_t(N * T), uint32_t(T + 12)));
      auto scratch2 = f.make2(dtype::f32, {N, T, 1, 1});
      f.run([&](backend& b, bool is_vk) {
        b.norm_matmul_swiglu(PICK(y), PICK(wgu), PICK(x), PICK(g), 1e-6f, PICK(h), PICK(scratch));
        b.matmul_add(PICK(acc), PICK(wo), PICK(x), PICK(scratch2));
      });
      CHECK(f.err(y) < tol);
      CHECK(f.err(acc) < tol);
    }
  }
}
