// The reference backend against hand-computed results (it is the oracle for the vk tests).
#include "gpu/ref/ref_q8_1.hpp"
#include "harness.hpp"

using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {
std::vector<std::byte> i32s(std::vector<int32_t> v) {
  auto b = as_bytes(v);
  return {b.begin(), b.end()};
}
}  // namespace

TEST_CASE("ref matmul, add, silu_mul, rms_norm", "[ref]") {
  auto b = make_ref_backend();
  const std::vector<float> w{1, 2, 3, 4, 5, 6};  // w {K=3, N=2}
  const std::vector<float> x{1, 0, -1, 2, 2, 2};  // x {K=3, T=2}
  auto tw = make(*b, dtype::f32, {3, 2, 1, 1}, as_bytes(w));
  auto tx = make(*b, dtype::f32, {3, 2, 1, 1}, as_bytes(x));
  auto ty = make(*b, dtype::f32, {2, 2, 1, 1}, {});
  b->begin_step();
  b->matmul(ty, tw, tx);
  REQUIRE(b->submit().ok());
  CHECK(read_f32(*b, ty) == std::vector<float>{-2, -2, 12, 30});

  const std::vector<float> row{10, 20};
  auto tr = make(*b, dtype::f32, {2, 1, 1, 1}, as_bytes(row));
  b->add(ty, ty, tr);
  CHECK(read_f32(*b, ty) == std::vector<float>{8, 18, 22, 50});

  const std::vector<float> g{0, 1}, u{3, 2};
  auto tg = make(*b, dtype::f32, {2, 1, 1, 1}, as_bytes(g));
  auto tu = make(*b, dtype::f32, {2, 1, 1, 1}, as_bytes(u));
  b->silu_mul(tg, tg, tu);
  auto s = read_f32(*b, tg);
  CHECK(s[0] == 0.f);
  CHECK(s[1] == Approx(2.0 / (1.0 + std::exp(-1.0))));

  const std::vector<float> ga{0, 1, -2}, ua{3, 2, 1};
  auto tga = make(*b, dtype::f32, {3, 1, 1, 1}, as_bytes(ga));
  auto tua = make(*b, dtype::f32, {3, 1, 1, 1}, as_bytes(ua));
  b->gelu_mul(tga, tga, tua);
  auto gl = read_f32(*b, tga);
  CHECK(gl[0] == 0.f);
  CHECK(gl[1] == Approx(2 * 0.841192).epsilon(1e-5));   // gelu_tanh(1) * 2
  CHECK(gl[2] == Approx(-0.045402).epsilon(1e-4));      // gelu_tanh(-2)
  b->scale(tua, tua, 2.f);
  CHECK(read_f32(*b, tua) == std::vector<float>{6, 4, 2});
  b->scale(tua, tua, 1.f, 3.f);  // 3 tanh(x / 3)
  CHECK(read_f32(*b, tua)[0] == Approx(3 * std::tanh(2.0)));

  const std::vector<float> v{3, 4}, nw{1, 2};
  auto tv = make(*b, dtype::f32, {2, 1, 1, 1}, as_bytes(v));
  auto tn = make(*b, dtype::f32, {2, 1, 1, 1}, as_bytes(nw));
  b->rms_norm(tv, tv, tn, 0.f);
  auto r = read_f32(*b, tv);
  const double rms = std::sqrt(12.5);
  CHECK(r[0] == Approx(3 / rms));
  CHECK(r[1] == Approx(8 / rms));
}

TEST_CASE("ref softmax, argmax (lowest index on ties), rope identity at 0", "[ref]") {
  auto b = make_ref_backend();
  const std::vector<float> x{1, 3, 3, 0};
  auto tx = make(*b, dtype::f32, {4, 1, 1, 1}, as_bytes(x));
  auto ti = make(*b, dtype::i32, {1, 1, 1, 1}, {});
  b->argmax(ti, tx);
  CHECK(read_i32(*b, ti)[0] == 1);
  auto ts = make(*b, dtype::f32, {4, 1, 1, 1}, {});
  b->softmax(ts, tx);
  auto s = read_f32(*b, ts);
  CHECK(s[0] + s[1] + s[2] + s[3] == Approx(1.0));
  CHECK(s[1] == Approx(std::exp(2.0) / (2 * std::exp(2.0) + 1 + std::exp(-1.0))));

  auto q = randn(8, 1);
  auto tq = make(*b, dtype::f32, {4, 2, 1, 1}, as_bytes(q));
  auto tp = make(*b, dtype::i32, {1, 1, 1, 1}, i32s({0}));
  tensor none;
  none.ne = {0, 1, 1, 1};
  b->rope(tq, tp, {rope_mode::neox, 4, 10000.f, 1.f}, none);
  CHECK(read_f32(*b, tq) == q);
  auto tp1 = make(*b, dtype::i32, {1, 1, 1, 1}, i32s({1}));
  b->rope(tq, tp1, {rope_mode::normal, 2, 10000.f, 1.f}, none);  // only dims 0,1 rotate by 1 rad
  auto r = read_f32(*b, tq);
  CHECK(r[0] == Approx(q[0] * std::cos(1.0) - q[1] * std::sin(1.0)));
  CHECK(r[1] == Approx(q[0] * std::sin(1.0) + q[1] * std::cos(1.0)));
  CHECK(r[2] == q[2]);
  CHECK(r[3] == q[3]);
}

TEST_CASE("ref paged attention with one key returns its value; kv_store places rows", "[ref]") {
  auto b = make_ref_backend();
  const int D = 2;
  auto kc = make(*b, dtype::f32, {D, 8, 1, 1}, {});
  auto vc = make(*b, dtype::f32, {D, 8, 1, 1}, {});
  const std::vector<float> k{1, 0}, v{5, 7};
  auto tk = make(*b, dtype::f32, {D, 1, 1, 1}, as_bytes(k));
  auto tv = make(*b, dtype::f32, {D, 1, 1, 1}, as_bytes(v));
  auto slots = make(*b, dtype::i32, {1, 1, 1, 1}, i32s({6}));  // block 3 of size 2, offset 0
  b->kv_store(kc, vc, tk, tv, slots);
  CHECK(read_f32(*b, vc)[12] == 5.f);
  auto bt = make(*b, dtype::i32, {1, 1, 1, 1}, i32s({3}));
  auto seq = make(*b, dtype::i32, {1, 1, 1, 1}, i32s({0}));
  auto pos = make(*b, dtype::i32, {1, 1, 1, 1}, i32s({0}));
  auto tq = make(*b, dtype::f32, {D, 1, 1, 1}, as_bytes(k));
  auto out = make(*b, dtype::f32, {D, 1, 1, 1}, {});
  b->attention(out, tq, kc, vc, bt, seq, pos, {1, 1, D, 2, 1, 0.5f});
  CHECK(read_f32(*b, out) == v);
  // A sink logit joins the denominator only: score 0.5 (q.k * scale) against sink 0.5 halves v.
  attention_params ap{1, 1, D, 2, 1, 0.5f};
  const std::vector<float> sk{0.5f};
  ap.sinks = make(*b, dtype::f32, {1, 1, 1, 1}, as_bytes(sk));
  b->attention(out, tq, kc, vc, bt, seq, pos, ap);
  CHECK(read_f32(*b, out)[0] == Approx(2.5f));
  CHECK(read_f32(*b, out)[1] == Approx(3.5f));
}

TEST_CASE("ref rejects out-of-bounds uploads", "[ref]") {
  auto b = make_ref_backend();
  auto t = make(*b, dtype::f32, {4, 1, 1, 1}, {});
  std::vector<std::byte> big(20);
  CHECK_FALSE(b->upload(t, big).ok());
  CHECK_FALSE(b->upload(t, std::span<const std::byte>(big).first(8), 12).ok());
}

// gpu/ref's q8_1 twin (ref_q8_1.hpp): block_q8_1 as ggml writes it, and each type's integer
// decode against dequantize_row (the dot with the q8_1 blocks' own values, d * qs).
TEST_CASE("ref q8_1: quantized blocks and integer dots against the dequantized weights", "[ref][q8_1]") {
  const int64_t K = 512;
  const auto xv = randn(size_t(K), 21);
  std::vector<std::byte> xq(size_t(K / 32 * k_q8_1_block_bytes));
  quantize_row_q8_1(xv.data(), xq.data(), K);
  std::vector<float> xd(static_cast<size_t>(K));  // d * qs
  double s0 = 0;
  for (int64_t b = 0; b < K / 32; ++b) {
    const std::byte* blk = xq.data() + b * k_q8_1_block_bytes;
    uint16_t hd, hs;
    std::memcpy(&hd, blk, 2);
    std::memcpy(&hs, blk + 2, 2);
    int sum = 0, qmax = 0;
    for (int l = 0; l < 32; ++l) {
      const int q = static_cast<int8_t>(blk[4 + l]);
      sum += q;
      qmax = std::max(qmax, std::abs(q));
      xd[size_t(32 * b + l)] = f16_to_f32(hd) * static_cast<float>(q);
      CHECK(std::fabs(xd[size_t(32 * b + l)] - xv[size_t(32 * b + l)]) <= f16_to_f32(hd) * 0.51f + 1e-6f);
    }
    CHECK(qmax == 127);  // the block's largest |x| maps to 127
    const float s_want = f16_to_f32(hd) * static_cast<float>(sum);
    CHECK(std::fabs(f16_to_f32(hs) - s_want) <= 1e-3f * std::fabs(s_want) + 1e-6f);
    if (b == 0) s0 = sum;
  }
  CHECK(s0 != 0);
  for (dtype t : {dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0, dtype::q4_K, dtype::q5_K,
                  dtype::q6_K}) {
    INFO(traits(t).name);
    REQUIRE(has_q8_1_dot(t));
    const auto w = encode(t, randn(size_t(K), 22), K);
    std::vector<float> wd(static_cast<size_t>(K));
    dequantize_row(t, w.data(), wd.data(), K);
    double want = 0, scale = 0;
    for (int64_t k = 0; k < K; ++k) {
      want += static_cast<double>(wd[size_t(k)]) * xd[size_t(k)];
      scale += std::fabs(static_cast<double>(wd[size_t(k)]) * xd[size_t(k)]);
    }
    // Exact but for the offsets' use of s (f16) and the weights' scales multiplied in f32.
    CHECK(std::fabs(vec_dot_q8_1(t, w.data(), xq.data(), K) - want) <= 2e-3 * scale);
  }
  CHECK(!has_q8_1_dot(dtype::f16));
  CHECK(!has_q8_1_dot(dtype::iq4_xs));
}
