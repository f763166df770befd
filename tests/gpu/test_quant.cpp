// Host quantisation: scalar conversions and per-type round-trip error bounds.
#include "harness.hpp"

#include "gpu/iq_grids.hpp"

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
                                            {dtype::q6_K, 0.04}, {dtype::q4_1, 0.12}, {dtype::q5_0, 0.07},
                                            {dtype::q5_1, 0.06}, {dtype::q2_K, 0.45}, {dtype::q3_K, 0.25},
                                            {dtype::q5_K, 0.06}, {dtype::iq4_nl, 0.12}, {dtype::iq4_xs, 0.12},
                                            {dtype::mxfp4, 0.2}, {dtype::iq3_xxs, 0.25}, {dtype::iq3_s, 0.2},
                                            {dtype::iq2_xxs, 0.45}, {dtype::iq2_xs, 0.4}, {dtype::iq2_s, 0.36},
                                            {dtype::iq1_s, 0.6}, {dtype::iq1_m, 0.6}};
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
  for (dtype t : {dtype::q8_0, dtype::q4_0, dtype::q4_K, dtype::q6_K, dtype::q4_1, dtype::q5_0, dtype::q5_1,
                  dtype::q2_K, dtype::q3_K, dtype::q5_K, dtype::iq4_nl, dtype::iq4_xs, dtype::mxfp4}) {
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

namespace {
// Decodes one hand-made block of type t (bytes given) to its elements.
std::vector<float> decode(dtype t, std::vector<uint8_t> bytes) {
  REQUIRE(bytes.size() == traits(t).block_bytes);
  std::vector<float> y(traits(t).block_elems);
  dequantize_row(t, reinterpret_cast<const std::byte*>(bytes.data()), y.data(), traits(t).block_elems);
  return y;
}
}  // namespace

TEST_CASE("hand-made blocks decode as llama.cpp defines each format", "[quant]") {
  SECTION("q4_1: x = d*nibble + m, low nibbles first") {
    std::vector<uint8_t> b = {0x00, 0x3c, 0x00, 0xc8};  // d = 1, m = -8
    for (int i = 0; i < 16; ++i) b.push_back(static_cast<uint8_t>(i | ((15 - i) << 4)));
    auto y = decode(dtype::q4_1, b);
    for (int i = 0; i < 16; ++i) {
      CHECK(y[i] == static_cast<float>(i - 8));
      CHECK(y[i + 16] == static_cast<float>(7 - i));
    }
  }
  SECTION("q5_0 / q5_1: bit e of qh is element e's fifth bit") {
    std::vector<uint8_t> b = {0x00, 0x38, 0x01, 0x00, 0x00, 0x80};  // d = 0.5, qh = bits 0 and 31
    b.resize(22, 0x00);
    b[6 + 15] = 0xf0;  // element 31's low nibble 15
    auto y = decode(dtype::q5_0, b);
    CHECK(y[0] == 0.f);          // 16 - 16
    CHECK(y[1] == -8.f);         // 0 - 16
    CHECK(y[31] == 7.5f);        // (15 | 16) - 16
    std::vector<uint8_t> c = {0x00, 0x3c, 0x00, 0x3c, 0x00, 0x00, 0x01, 0x00};  // d = 1, m = 1, qh bit 16
    c.resize(24, 0x00);
    c[8] = 0x3a;
    auto z = decode(dtype::q5_1, c);
    CHECK(z[0] == 11.f);         // 10 + 1
    CHECK(z[16] == 20.f);        // (3 | 16) + 1
  }
  SECTION("iq4_nl: nibbles index kvalues_iq4nl") {
    std::vector<uint8_t> b = {0x00, 0x3c, 0xf0};  // d = 1
    b.resize(18, 0x88);
    auto y = decode(dtype::iq4_nl, b);
    CHECK(y[0] == -127.f);
    CHECK(y[16] == 113.f);
    CHECK(y[1] == 1.f);
  }
  SECTION("mxfp4: E8M0 exponent, doubled E2M1 values") {
    std::vector<uint8_t> b = {128, 0x97};  // scale 2^(128-128); nibbles 7 (6.0 doubled), 9 (-0.5 doubled)
    b.resize(17, 0x00);
    auto y = decode(dtype::mxfp4, b);
    CHECK(y[0] == 12.f);
    CHECK(y[16] == -1.f);
    CHECK(y[1] == 0.f);
    b[0] = 0;  // 2^-128: subnormal scale
    CHECK(decode(dtype::mxfp4, b)[0] == std::ldexp(12.f, -128));
  }
  SECTION("q2_K: scale/min nibbles per 16 elements, 2-bit fields per 32-element quarter") {
    std::vector<uint8_t> b(84, 0x00);
    b[0] = 0x21;              // sub-block 0: scale 1, min 2
    b[1] = 0x03;              // sub-block 1: scale 3, min 0
    b[16] = 0x03 | (2 << 2);  // element 0: q 3; element 32: q 2
    b[16 + 16] = 0x01;        // element 16: q 1
    b[80 + 1] = 0x3c;         // d = 1
    b[82 + 1] = 0x3c;         // dmin = 1
    auto y = decode(dtype::q2_K, b);
    CHECK(y[0] == 1.f);       // 1*3 - 2
    CHECK(y[16] == 3.f);      // 3*1 - 0
    CHECK(y[32] == 0.f);      // sub-block 2 has scale 0 and min 0
  }
  SECTION("q3_K: hmask bit clear subtracts 4; 6-bit scales minus 32") {
    std::vector<uint8_t> b(110, 0x00);
    b[0] = 0x01;              // element 0 high bit set; element 32 (bit 1) clear
    b[32] = 0x02 | (1 << 2);  // element 0 low 2 bits 2; element 32 low bits 1
    b[96 + 0] = 0x01 | 0x20;  // scale 0 low 4 bits 1; scale 8 low 4 bits 2
    b[96 + 2] = 0x01;         // scale 2 low 4 bits 1
    b[104 + 0] = 0x02 | (0x02 << 4);  // scale 0 high 2 bits 2 (=> 33 - 32 = 1), scale 8 high 2 (=> 34 - 32)
    b[104 + 2] = 0x02;        // scale 2 high bits 2 => 33 - 32 = 1
    b[108 + 1] = 0x3c;        // d = 1
    auto y = decode(dtype::q3_K, b);
    CHECK(y[0] == 2.f);       // 1 * (2 - 0)
    CHECK(y[32] == -3.f);     // scale 2 = 1: (1 - 4)
    CHECK(y[128] == -8.f);    // scale 8 = 2, q 0 - 4
  }
  SECTION("q5_K: qh bit s of byte l is element 32s + l's fifth bit") {
    std::vector<uint8_t> b(176, 0x00);
    b[1] = 0x3c;              // d = 1, dmin = 0
    b[4 + 1] = 1;             // sub-block 1 scale 1
    b[16 + 3] = 0x02;         // element 32 + 3: fifth bit
    b[48 + 3] = 0x50;         // element 32 + 3: high nibble 5
    auto y = decode(dtype::q5_K, b);
    CHECK(y[35] == 21.f);
    CHECK(y[3] == 0.f);       // sub-block 0 scale 0
  }
  SECTION("iq4_xs: 6-bit sub-block scales (4 low in scales_l, 2 high in scales_h), minus 32") {
    std::vector<uint8_t> b(136, 0x00);
    b[1] = 0x3c;                    // d = 1
    b[2] = 0x02;                    // scales_h: sub-block 0 high bits 2 => ls = 32 + low
    b[4] = 0x03;                    // sub-block 0 low bits 3 => ls - 32 = 3
    b[8 + 0] = 0xf8;                // element 0: kv[8] = 1; element 16: kv[15] = 113
    auto y = decode(dtype::iq4_xs, b);
    CHECK(y[0] == 3.f);
    CHECK(y[16] == 339.f);
    CHECK(y[32] == 32.f * 127.f);   // sub-block 1: ls 0 => -32, nibble 0 => -127
  }
}

namespace {
const dtype k_grid_iquants[] = {dtype::iq3_xxs, dtype::iq3_s, dtype::iq2_xxs, dtype::iq2_xs,
                                dtype::iq2_s,   dtype::iq1_s, dtype::iq1_m};
}  // namespace

TEST_CASE("grid i-quants: zero blocks decode to zero, quantisation is deterministic", "[quant][iq]") {
  for (dtype t : k_grid_iquants) {
    INFO("type " << traits(t).name);
    std::vector<float> x(512, 0.f), y(512, 1.f);
    std::vector<std::byte> q(row_bytes(t, 512)), q2(row_bytes(t, 512));
    quantize_row(t, x.data(), q.data(), 512);
    dequantize_row(t, q.data(), y.data(), 512);
    for (float v : y) REQUIRE(v == 0.f);
    const auto r = randn(512, 3);
    quantize_row(t, r.data(), q.data(), 512);
    quantize_row(t, r.data(), q2.data(), 512);
    CHECK(q == q2);
  }
}

TEST_CASE("the grids are ggml's published tables", "[quant][iq]") {
  // Spot values of ggml-common.h (first and last points) and ksigns_iq2xs.
  CHECK(iq::iq2xxs_grid[0] == 0x0808080808080808ull);
  CHECK(iq::iq2xxs_grid[255] == 0x2b2b2b1908081908ull);
  CHECK(iq::iq2xs_grid[511] == 0x2b2b2b2b2b2b2b2bull);
  CHECK(iq::iq2s_grid[1023] == 0x2b2b2b2b2b2b2b2bull);
  CHECK(iq::iq3xxs_grid[0] == 0x04040404u);
  CHECK(iq::iq3xxs_grid[255] == 0x3e341c04u);
  CHECK(iq::iq3s_grid[511] == 0x0f0f0101u);
  CHECK(iq::iq1s_grid[0] == 0xffffffffffffffffull);
  CHECK(iq::iq1s_grid[2047] == 0x0101010101010101ull);
  CHECK(iq::ksigns(0) == 0);
  CHECK(iq::ksigns(1) == 129);
  CHECK(iq::ksigns(3) == 3);
  CHECK(iq::ksigns(127) == 255);
  CHECK(iq::ksigns(126) == 126);
}

TEST_CASE("hand-made grid i-quant blocks decode as llama.cpp defines each format", "[quant][iq]") {
  SECTION("iq2_xxs: byte l of q0 indexes the grid, 7-bit sign index l of q1, ls in q1's top nibble") {
    std::vector<uint8_t> b(66, 0x00);
    b[1] = 0x3c;                       // d = 1
    b[2] = 1;                          // group 0: point 1 = 0x080808080808082b (element 0: 43)
    b[6] = 0x01;                       // group 0 sign index 1 -> 129: elements 0 and 7 negative
    b[9] = 0x30;                       // ls = 3: db = (0.5 + 3) * 0.25 = 0.875
    auto y = decode(dtype::iq2_xxs, b);
    CHECK(y[0] == -43.f * 0.875f);
    CHECK(y[1] == 8.f * 0.875f);
    CHECK(y[7] == -8.f * 0.875f);
    CHECK(y[8] == 8.f * 0.875f);       // group 1: point 0, sign index 0
    CHECK(y[32] == 8.f * 0.125f);      // sub-block 1: ls 0
  }
  SECTION("iq2_xs: 9-bit index | sign index << 9, 4-bit scales per 16") {
    std::vector<uint8_t> b(74, 0x00);
    b[1] = 0x3c;
    b[2] = 0xff; b[3] = 0x03;          // group 0: point 511 (all 43), sign index 1
    b[66] = 0x21;                      // groups 0-1: ls 1 (db 0.375), groups 2-3: ls 2 (0.625)
    auto y = decode(dtype::iq2_xs, b);
    CHECK(y[0] == -43.f * 0.375f);
    CHECK(y[6] == 43.f * 0.375f);
    CHECK(y[7] == -43.f * 0.375f);
    CHECK(y[16] == 8.f * 0.625f);
  }
  SECTION("iq2_s: index bits 8-9 in qh, 8 explicit signs") {
    std::vector<uint8_t> b(82, 0x00);
    b[1] = 0x3c;
    b[2 + 1] = 0xff;                   // group 1 index low 8 bits
    b[66] = 0x03 << 2;                 // group 1 index bits 8-9: point 1023 (all 43)
    b[34 + 1] = 0x80;                  // group 1: element 7 negative (no parity rule)
    auto y = decode(dtype::iq2_s, b);
    CHECK(y[8] == 43.f * 0.125f);
    CHECK(y[15] == -43.f * 0.125f);
  }
  SECTION("iq3_xxs: two 4-element points per group, db = d*(0.5+ls)*0.5") {
    std::vector<uint8_t> b(98, 0x00);
    b[1] = 0x3c;
    b[2 + 1] = 255;                    // group 0 elements 4-7: point 255 = 0x3e341c04
    b[66] = 0x40;                      // group 0 sign index 64 -> 192: elements 6 and 7 negative
    b[69] = 0x10;                      // ls 1: db 0.75
    auto y = decode(dtype::iq3_xxs, b);
    CHECK(y[0] == 4.f * 0.75f);
    CHECK(y[4] == 4.f * 0.75f);
    CHECK(y[5] == 28.f * 0.75f);
    CHECK(y[6] == -52.f * 0.75f);
    CHECK(y[7] == -62.f * 0.75f);
  }
  SECTION("iq3_s: 9th index bit k of qh, db = d*(1+2ls)") {
    std::vector<uint8_t> b(110, 0x00);
    b[1] = 0x3c;
    b[2 + 8 + 1] = 0xff;               // sub-block 1, point 1 (elements 36..39) low 8 bits
    b[66 + 1] = 0x02;                  // its 9th bit: point 511 = 0x0f0f0101
    b[74 + 4] = 0x20;                  // sub-block 1 group 0: element 5 negative
    b[106] = 0x20;                     // sub-block 1: ls 2 -> db 5
    auto y = decode(dtype::iq3_s, b);
    CHECK(y[32] == 5.f);               // point 0 (all 1)
    CHECK(y[36] == 5.f);
    CHECK(y[37] == -5.f);
    CHECK(y[38] == 75.f);
    CHECK(y[0] == 1.f);                // sub-block 0: ls 0 -> db 1
  }
  SECTION("iq1_s: 11-bit index, 3-bit odd scale and delta sign in qh") {
    std::vector<uint8_t> b(50, 0x00);
    b[1] = 0x3c;
    b[2] = 0xff;                       // group 0 index low bits
    const uint16_t qh = 7 | (2 << 12) | 0x8000;  // group 0: point 2047 (all +1); ls 2; delta -1/8
    std::memcpy(&b[34], &qh, 2);
    auto y = decode(dtype::iq1_s, b);
    CHECK(y[0] == 5.f * 0.875f);
    CHECK(y[8] == 5.f * (-1.f - 0.125f));  // group 1: point 0 (all -1)
    CHECK(y[32] == -1.f + 0.125f);         // sub-block 1: ls 0, delta +1/8
  }
  SECTION("iq1_m: f16 d in the scales' top nibbles, delta per group") {
    std::vector<uint8_t> b(56, 0x00);
    b[0] = 0xff;                       // group 0 index low bits
    b[32] = 0x07 | 0x80;               // group 0: high bits 7 (point 2047); group 1: delta -1/8
    uint16_t sc[4] = {static_cast<uint16_t>(1 | (2 << 3)), 0, static_cast<uint16_t>(0xc << 12),
                      static_cast<uint16_t>(0x3 << 12)};  // half 0: ls 1, half 1: ls 2; d = 0x3c00
    std::memcpy(&b[48], sc, 8);
    auto y = decode(dtype::iq1_m, b);
    CHECK(y[0] == 3.f * 1.125f);
    CHECK(y[8] == 3.f * (-1.f - 0.125f));
    CHECK(y[16] == 5.f * (-1.f + 0.125f));
  }
}

TEST_CASE("the shaders' packed grids decode to ggml's points", "[quant][iq]") {
  namespace o = iq::shader_words;
  const auto w = iq::shader_grid_words();
  REQUIRE(w.size() == o::total);
  // 3-level grids: 2-bit level indices, as common/dequant.glsl reads them.
  auto unpacked = [&](uint32_t base, uint32_t p, uint32_t j) { return (w[base + p / 2] >> (16 * (p & 1) + 2 * j)) & 3u; };
  const struct { uint32_t base; const uint64_t* grid; uint32_t n; } iq2[] = {
      {o::iq2xxs, iq::iq2xxs_grid, 256}, {o::iq2xs, iq::iq2xs_grid, 512}, {o::iq2s, iq::iq2s_grid, 1024}};
  for (auto g : iq2)
    for (uint32_t p = 0; p < g.n; ++p)
      for (uint32_t j = 0; j < 8; ++j) {
        const uint32_t c = unpacked(g.base, p, j);
        REQUIRE(8 + 17 * c + (c >> 1) == ((g.grid[p] >> (8 * j)) & 255));
      }
  for (uint32_t p = 0; p < 2048; ++p)
    for (uint32_t j = 0; j < 8; ++j)
      REQUIRE(static_cast<int>(unpacked(o::iq1s, p, j)) - 1 == static_cast<int8_t>(iq::iq1s_grid[p] >> (8 * j)));
  for (uint32_t p = 0; p < 256; ++p) REQUIRE(w[o::iq3xxs + p] == iq::iq3xxs_grid[p]);
  for (uint32_t p = 0; p < 512; ++p) REQUIRE(w[o::iq3s + p] == iq::iq3s_grid[p]);
}
