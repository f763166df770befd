// Host quantisation: scalar conversions and per-type round-trip error bounds.
#include "harness.hpp"

using namespace vks::gpu;
using namespace vks::gpu::test;

TEST_CASE("f16 conversions round to nearest even and handle specials", "[quant]") {
  CHECK(f32_to_f16(1.f) == 0x3c00);
  CHECK(f32_to_f16(-2.f) == 0xc000);
  CHECK(f32_to_f16(65504.f) == 0x7bff);
  CHECK(f32_to_f16(65520.f) == 0x7c00);                 // rounds up to inf
  CHECK(f32_to_f16(std::ldexp(1.f, -24)) == 0x0001);    // smallest subnormal
  CHECK(f32_to_f16(std::ldexp(1.f, -25)) == 0x0000);    // tie to even -> 0
  CHECK(f32_to_f16(std::ldexp(3.f, -26)) == 0x0001);    // 0.75 ulp -> 1
  CHECK(f32_to_f16(1.f + std::ldexp(1.f, -11)) == 0x3c00);  // tie to even
  CHECK(f32_to_f16(1.f + 3 * std::ldexp(1.f, -11)) == 0x3c02);
  CHECK(f32_to_f16(INFINITY) == 0x7c00);
  CHECK((f32_to_f16(NAN) & 0x7c00) == 0x7c00);
  CHECK((f32_to_f16(NAN) & 0x3ff) != 0);
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite half round-trips exactly
    REQUIRE(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))) == h);
    REQUIRE(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h | 0x8000))) == (h | 0x8000));
  }
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.f, -24));
}

TEST_CASE("bf16 conversions", "[quant]") {
  CHECK(f32_to_bf16(1.f) == 0x3f80);
  CHECK(bf16_to_f32(0x3f80) == 1.f);
  CHECK(f32_to_bf16(1.f + std::ldexp(1.f, -8)) == 0x3f80);       // tie to even
  CHECK(f32_to_bf16(1.f + 3 * std::ldexp(1.f, -8)) == 0x3f82);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST_CASE("quantize/dequantize round trip stays within per-type bounds", "[quant]") {
  // Relative RMS error bounds on N(0,1) data (well above what the formats achieve).
  const std::pair<dtype, double> cases[] = {{dtype::f32, 0.0},   {dtype::f16, 1e-3},  {dtype::bf16, 5e-3},
                                            {dtype::q8_0, 0.01}, {dtype::q4_0, 0.15}, {dtype::q4_K, 0.12},
                                            {dtype::q6_K, 0.04}};
  const int64_t n = 4096;
  const auto x = randn(n, 7);
  for (auto [t, bound] : cases) {
    INFO("type " << traits(t).name);
    std::vector<std::byte> q(row_bytes(t, n));
    quantize_row(t, x.data(), q.data(), n);
    std::vector<float> y(n);
    dequantize_row(t, q.data(), y.data(), n);
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; ++i) {
      se += (x[i] - y[i]) * (x[i] - y[i]);
      sx += x[i] * x[i];
    }
    CHECK(std::sqrt(se / sx) <= bound);
  }
}

TEST_CASE("quantisers handle all-zero and constant blocks", "[quant]") {
  for (dtype t : {dtype::q8_0, dtype::q4_0, dtype::q4_K, dtype::q6_K}) {
    INFO("type " << traits(t).name);
    for (float c : {0.f, 0.5f, -3.f}) {
      std::vector<float> x(256, c), y(256);
      std::vector<std::byte> q(row_bytes(t, 256));
      quantize_row(t, x.data(), q.data(), 256);
      dequantize_row(t, q.data(), y.data(), 256);
      for (float v : y) REQUIRE(std::fabs(v - c) <= 0.02f * std::fabs(c) + 1e-6f);
    }
  }
}
