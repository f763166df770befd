// Vulkan backend runtime behaviour: command-buffer reuse, in-step uploads, views, errors.
#include "vk_fixture.hpp"

using namespace vks::gpu;
using namespace vks::gpu::test;

TEST_CASE("vk reused command buffers give identical results and see fresh in-step uploads", "[vk][runtime]") {
  pair_fixture f;
  const int64_t K = 64, N = 48, T = 5;
  auto w = f.make2(dtype::q8_0, {K, N, 1, 1}, encode(dtype::q8_0, randn(size_t(K * N), 1), K));
  auto x = f.make2(dtype::f32, {K, T, 1, 1});
  auto h = f.make2(dtype::f32, {N, T, 1, 1});
  auto nw = f.f32({N, 1, 1, 1}, randn(size_t(N), 2));
  auto am = f.make2(dtype::i32, {T, 1, 1, 1});
  std::vector<int32_t> first;
  for (uint32_t step = 0; step < 4; ++step) {
    const auto xs = randn(size_t(K * T), step < 2 ? 100 : 100 + step);  // steps 0,1 identical inputs
    f.run([&](backend& b, bool is_vk) {
      REQUIRE(b.upload(PICK(x), as_bytes(xs)).ok());  // in-step upload, ordered before the ops
      b.matmul(PICK(h), PICK(w), PICK(x));
      b.rms_norm(PICK(h), PICK(h), PICK(nw), 1e-6f);
      b.argmax(PICK(am), PICK(h));
    });
    CHECK(f.err(h) < 1e-5);
    auto got = read_i32(f.vk, am.v);
    CHECK(got == read_i32(*f.ref, am.r));
    if (step == 0) first = got;
    if (step == 1) CHECK(got == first);
  }
}

TEST_CASE("vk upload/download round trip at offsets, and bad input gives errors", "[vk][runtime]") {
  backend& b = *g_vk;
  auto t = b.alloc(dtype::f32, {10, 3, 1, 1}, "rt");
  REQUIRE(t.ok());
  std::vector<float> v(30);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  REQUIRE(b.upload(*t, as_bytes(v)).ok());
  const std::vector<float> patch{-1, -2};
  REQUIRE(b.upload(*t, as_bytes(patch), 8).ok());
  auto r = read_f32(b, t->rows(0, 1));
  CHECK(r[2] == -1.f);
  CHECK(r[3] == -2.f);
  CHECK(read_f32(b, t->rows(2, 1))[9] == 29.f);
  std::vector<std::byte> big(200);
  CHECK_FALSE(b.upload(*t, big).ok());
  tensor bogus = *t;
  bogus.buf = 1u << 30;
  CHECK_FALSE(b.upload(bogus, std::span<const std::byte>(big).first(4)).ok());
  CHECK_FALSE(b.alloc(dtype::q8_0, {33, 1, 1, 1}, "bad").ok());
  CHECK_FALSE(b.alloc(dtype::f32, {int64_t{1} << 40, 1, 1, 1}, "huge").ok());
}
