// Every Vulkan kernel against gpu/ref on random inputs: shapes include ragged sizes and token
// counts that straddle tile edges. Tolerances: relative to the output's max magnitude.
#include "attn_pool.hpp"

using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {
const dtype k_weight_types[] = {dtype::f32,  dtype::f16,  dtype::bf16, dtype::q8_0, dtype::q4_0,   dtype::q4_K,   dtype::q6_K,
                                dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q2_K, dtype::q3_K,   dtype::q5_K,
                                dtype::iq4_nl, dtype::iq4_xs, dtype::mxfp4, dtype::iq3_xxs, dtype::iq3_s,
                                dtype::iq2_xxs, dtype::iq2_xs, dtype::iq2_s, dtype::iq1_s, dtype::iq1_m};
}

TEST_CASE("vk matmul/matvec match ref for every weight type and token counts across tile edges", "[vk][matmul]") {
  pair_fixture f;
  for (dtype t : k_weight_types) {
    const bool kq = traits(t).block_elems == 256;
    const int64_t K = kq ? 512 : (traits(t).block_elems == 32 ? 96 : 76), N = 67;
    auto w = f.make2(t, {K, N, 1, 1}, encode(t, randn(size_t(K * N), 11), K));
    // The types added for #21 share every code path but their decode with the older ones:
    // fewer token counts (still matvec, a small batch, a tile edge, several tiles) keep the
    // test fast under each tuning.
    const bool added = t >= dtype::q4_1;
    const std::vector<int64_t> token_counts = added ? std::vector<int64_t>{1, 3, 9, 65}
                                                    : std::vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 9, 32, 33, 63, 64, 65, 127, 128, 129};
    for (int64_t T : token_counts) {
      INFO("type " << traits(t).name << " K " << K << " N " << N << " T " << T);
      auto x = f.f32({K, T, 1, 1}, randn(size_t(K * T), uint32_t(T)));
      auto y = f.make2(dtype::f32, {N, T, 1, 1});
      f.run([&](backend& b, bool is_vk) { b.matmul(PICK(y), PICK(w), PICK(x)); });
      CHECK(f.err(y) < 1e-5);
    }
  }
}

TEST_CASE("vk matmul/matvec match ref for row counts across workgroup edges", "[vk][matmul]") {
  pair_fixture f;
  for (dtype t : k_weight_types) {
    const int64_t K = traits(t).block_elems == 256 ? 256 : 64;
    for (int64_t N : {1, 7, 32, 33, 64, 65, 128, 129}) {
      auto w = f.make2(t, {K, N, 1, 1}, encode(t, randn(size_t(K * N), uint32_t(N)), K));
      for (int64_t T : {1, 7, 33}) {
        INFO("type " << traits(t).name << " K " << K << " N " << N << " T " << T);
        auto x = f.f32({K, T, 1, 1}, randn(size_t(K * T), uint32_t(T + 100)));
        auto y = f.make2(dtype::f32, {N, T, 1, 1});
        f.run([&](backend& b, bool is_vk) { b.matmul(PICK(y), PICK(w), PICK(x)); });
        CHECK(f.err(y) < 1e-5);
      }
    }
  }
}

TEST_CASE("vk matmul on row views and odd K for scalar types", "[vk][matmul]") {
  pair_fixture f;
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
    INFO("type " << traits(t).name);
    const int64_t K = 37, N = 5, T = 3;  // odd K: f16/bf16 rows start at 2-byte offsets
    auto w = f.make2(t, {K, N + 2, 1, 1}, encode(t, randn(size_t(K * (N + 2)), 5), K));
    auto x = f.f32({K, T + 1, 1, 1}, randn(size_t(K * (T + 1)), 6));
    auto y = f.make2(dtype::f32, {N, T, 1, 1});
    f.run([&](backend& b, bool is_vk) { b.matmul(PICK(y), PICK(w).rows(1, N), PICK(x).rows(1, T)); });
    CHECK(f.err(y) < 1e-5);
  }
}

TEST_CASE("vk get_rows matches ref for every type", "[vk][get_rows]") {
  pair_fixture f;
  for (dtype t : k_weight_types) {
    INFO("type " << traits(t).name);
    const int64_t C = traits(t).block_elems == 256 ? 256 : 64, R = 19;
    auto tab = f.make2(t, {C, R, 1, 1}, encode(t, randn(size_t(C * R), 3), C));
    const std::vector<int32_t> idx{0, 18, 5, 5, 7, 1, 17};
    auto ti = f.i32({7, 1, 1, 1}, idx);
    auto out = f.make2(dtype::f32, {C, 7, 1, 1});
    f.run([&](backend& b, bool is_vk) { b.get_rows(PICK(out), PICK(tab), PICK(ti)); });
    CHECK(f.err(out) < 1e-6);
  }
}

TEST_CASE("vk rms_norm, softmax, argmax, add, silu_mul, gelu_mul, scale match ref", "[vk][rows]") {
  pair_fixture f;
  for (int64_t C : {1, 7, 32, 33, 64, 65, 128, 129, 576, 1000}) {
    for (int64_t R : {1, 7, 33}) {
      INFO("C " << C << " R " << R);
      auto x = f.f32({C, R, 1, 1}, randn(size_t(C * R), uint32_t(C + R), 3.f));
      auto w = f.f32({C, 1, 1, 1}, randn(size_t(C), 2));
      auto g = f.f32({C, R, 1, 1}, randn(size_t(C * R), 9));
      auto y1 = f.make2(dtype::f32, {C, R, 1, 1}), y2 = f.make2(dtype::f32, {C, R, 1, 1});
      auto y3 = f.make2(dtype::f32, {C, R, 1, 1}), y4 = f.make2(dtype::f32, {C, R, 1, 1});
      auto y5 = f.make2(dtype::f32, {C, R, 1, 1}), y6 = f.make2(dtype::f32, {C, R, 1, 1});
      auto y7 = f.make2(dtype::f32, {C, R, 1, 1}), y8 = f.make2(dtype::f32, {C, R, 1, 1});
      auto am = f.make2(dtype::i32, {R, 1, 1, 1});
      f.run([&](backend& b, bool is_vk) {
        b.rms_norm(PICK(y1), PICK(x), PICK(w), 1e-5f);
        b.softmax(PICK(y2), PICK(x));
        b.argmax(PICK(am), PICK(x));
        b.add(PICK(y3), PICK(x), PICK(w));  // row broadcast
        b.add(PICK(y4), PICK(x), PICK(g));
        b.silu_mul(PICK(y5), PICK(x), PICK(g));
        b.gelu_mul(PICK(y6), PICK(x), PICK(g));
        b.scale(PICK(y7), PICK(x), 16.f);
        b.scale(PICK(y8), PICK(x), 1.f, 2.f);  // soft-capped at 2 (x up to ~10)
      });
      CHECK(f.err(y6) < 1e-5);
      CHECK(f.err(y7) < 1e-6);
      CHECK(f.err(y8) < 1e-5);
      CHECK(f.err(y1) < 1e-5);
      CHECK(f.err(y2) < 1e-5);
      CHECK(f.err(y3) < 1e-6);
      CHECK(f.err(y4) < 1e-6);
      CHECK(f.err(y5) < 1e-5);
      CHECK(read_i32(f.vk, am.v) == read_i32(*f.ref, am.r));
    }
  }
}

TEST_CASE("vk argmax picks the lowest index on ties", "[vk][rows]") {
  pair_fixture f;
  std::vector<float> x(300, 1.f);
  x[200] = 5.f;
  x[77] = 5.f;
  x[299] = 5.f;
  auto tx = f.f32({300, 1, 1, 1}, x);
  auto am = f.make2(dtype::i32, {1, 1, 1, 1});
  f.run([&](backend& b, bool is_vk) { b.argmax(PICK(am), PICK(tx)); });
  CHECK(read_i32(f.vk, am.v)[0] == 77);
}

TEST_CASE("vk rope matches ref (normal, neox, partial dims, freq factors)", "[vk][rope]") {
  pair_fixture f;
  const int64_t D = 64, H = 3, T = 9;
  std::vector<int32_t> pos{0, 1, 2, 5, 17, 100, 511, 1000, 4095};
  auto tp = f.i32({T, 1, 1, 1}, pos);
  std::vector<float> ffv(D / 2);
  for (size_t i = 0; i < ffv.size(); ++i) ffv[i] = 1.f + 0.25f * float(i % 5);
  auto ff = f.f32({D / 2, 1, 1, 1}, ffv);
  twin none;
  none.r.ne = none.v.ne = {0, 1, 1, 1};
  for (auto mode : {rope_mode::normal, rope_mode::neox})
    for (int nd : {64, 32})
      for (bool use_ff : {false, true}) {
        INFO("mode " << int(mode) << " n_dims " << nd << " ff " << use_ff);
        auto x = f.f32({D, H, T, 1}, randn(size_t(D * H * T), uint32_t(nd)));
        const rope_params p{mode, nd, 10000.f, 0.5f};
        f.run([&](backend& b, bool is_vk) { b.rope(PICK(x), PICK(tp), p, use_ff ? PICK(ff) : PICK(none)); });
        CHECK(f.err(x) < 2e-3);  // float theta at positions up to 4095
      }
  // YaRN: a correction range inside the rotated pairs, and one collapsed to a point.
  for (auto [lo, hi] : {std::pair{2.f, 9.f}, std::pair{5.f, 5.f}}) {
    INFO("yarn corr " << lo << ".." << hi);
    auto x = f.f32({D, H, T, 1}, randn(size_t(D * H * T), 77u));
    rope_params p{rope_mode::neox, 64, 10000.f, 0.25f};
    p.ext_factor = 1.f;
    p.corr_low = lo;
    p.corr_high = hi;
    p.mscale = 1.1386f;
    f.run([&](backend& b, bool is_vk) { b.rope(PICK(x), PICK(tp), p, PICK(none)); });
    CHECK(f.err(x) < 2e-3);
  }
}

TEST_CASE("vk add_rms_norm (residual add fused with the next norm) matches ref", "[vk][rows]") {
  pair_fixture f;
  // C % 4 == 0 takes the fused texel kernel on CPU devices; 7 and 33 take add + rms_norm.
  for (int64_t C : {4, 7, 32, 33, 576, 1000}) {
    for (int64_t R : {1, 7, 33}) {
      INFO("C " << C << " R " << R);
      auto x = f.f32({C, R, 1, 1}, randn(size_t(C * R), uint32_t(3 * C + R), 3.f));
      auto g = f.f32({C, R, 1, 1}, randn(size_t(C * R), 11));
      auto w = f.f32({C, 1, 1, 1}, randn(size_t(C), 5));
      auto y = f.make2(dtype::f32, {C, R, 1, 1});
      f.run([&](backend& b, bool is_vk) { b.add_rms_norm(PICK(x), PICK(g), PICK(y), PICK(w), 1e-5f); });
      CHECK(f.err(x) < 1e-6);  // x += g in place
      CHECK(f.err(y) < 1e-5);
    }
  }
}

TEST_CASE("vk kv_store + paged attention match ref: mixed prefill/decode, GQA, scattered blocks", "[vk][attention]") {
  pair_fixture f;
  for (dtype ct : {dtype::f32, dtype::f16}) {
    // GQA groups 2, 3, 1, 8 and 7 (the texel kernel serves 2, 3, 1, 4 and 1 heads per invocation).
    for (auto [H, Hkv, D] : {std::tuple{4, 2, 8}, std::tuple{9, 3, 64}, std::tuple{2, 2, 128}, std::tuple{8, 1, 16},
                             std::tuple{14, 2, 32}}) {
      INFO("cache " << traits(ct).name << " H " << H << " Hkv " << Hkv << " D " << D);
      const int B = 16, maxb = 6, n_blocks = 24, W = Hkv * D;
      auto kc = f.make2(ct, {W, n_blocks * B, 1, 1}), vc = f.make2(ct, {W, n_blocks * B, 1, 1});
      // Three sequences: s0 history 40 then 1 decode token, s1 prefill of 37 tokens, s2 history 70 + 2 tokens.
      const std::vector<int32_t> bt{3, 9, 1, 20, 0, 0,  7, 2, 15, 0, 0, 0,  11, 4, 19, 6, 23, 0};
      auto tbt = f.i32({maxb, 3, 1, 1}, bt);
      std::vector<int32_t> hseq, hpos, slots;
      auto slot_of = [&](int s, int p) { return bt[size_t(s * maxb + p / B)] * B + p % B; };
      for (int p = 0; p < 40; ++p) hseq.push_back(0), hpos.push_back(p);
      for (int p = 0; p < 70; ++p) hseq.push_back(2), hpos.push_back(p);
      for (size_t i = 0; i < hseq.size(); ++i) slots.push_back(slot_of(hseq[i], hpos[i]));
      const int64_t Th = int64_t(hseq.size());
      auto hk = f.f32({W, Th, 1, 1}, randn(size_t(W * Th), 21)), hv = f.f32({W, Th, 1, 1}, randn(size_t(W * Th), 22));
      auto hs = f.i32({Th, 1, 1, 1}, slots);
      // The step: s0 decode at 40, s1 prefill 0..36, s2 decode at 70, 71.
      std::vector<int32_t> seq{0}, pos{40};
      for (int p = 0; p < 37; ++p) seq.push_back(1), pos.push_back(p);
      seq.push_back(2), pos.push_back(70);
      seq.push_back(2), pos.push_back(71);
      std::vector<int32_t> ss;
      for (size_t i = 0; i < seq.size(); ++i) ss.push_back(slot_of(seq[i], pos[i]));
      const int64_t T = int64_t(seq.size());
      auto k = f.f32({W, T, 1, 1}, randn(size_t(W * T), 31)), v = f.f32({W, T, 1, 1}, randn(size_t(W * T), 32));
      auto q = f.f32({int64_t(H) * D, T, 1, 1}, randn(size_t(H * D * T), 33));
      auto ts = f.i32({T, 1, 1, 1}, ss), tseq = f.i32({T, 1, 1, 1}, seq), tpos = f.i32({T, 1, 1, 1}, pos);
      auto out = f.make2(dtype::f32, {int64_t(H) * D, T, 1, 1});
      auto sinks = f.f32({H, 1, 1, 1}, randn(size_t(H), uint32_t(H + D), 3.f));  // gpt-oss: per-head sink logits
      // Plain, sliding windows (inside and beyond the histories), soft-capped scores, sinks.
      for (auto [window, softcap, sink] : {std::tuple{0, 0.f, false}, std::tuple{5, 0.f, false}, std::tuple{0, 1.5f, false},
                                           std::tuple{20, 2.f, false}, std::tuple{100, 0.f, false},
                                           std::tuple{0, 0.f, true}, std::tuple{5, 0.f, true}}) {
        INFO("window " << window << " softcap " << softcap << " sinks " << sink);
        attention_params ap{H, Hkv, D, B, maxb, 1.f / std::sqrt(float(D))};
        ap.window = window;
        ap.softcap = softcap;
        f.run([&](backend& b, bool is_vk) {
          if (sink) ap.sinks = PICK(sinks);
          b.kv_store(PICK(kc), PICK(vc), PICK(hk), PICK(hv), PICK(hs));
          b.kv_store(PICK(kc), PICK(vc), PICK(k), PICK(v), PICK(ts));
          b.attention(PICK(out), PICK(q), PICK(kc), PICK(vc), PICK(tbt), PICK(tseq), PICK(tpos), ap);
        });
        CHECK(f.err(out) < (ct == dtype::f16 ? 2e-3 : 1e-5));
      }
    }
  }
}

// ---- fused ops (gpu::backend's defaults, run by gpu/ref, are their reference) -----------

TEST_CASE("vk matmul_split (stacked q/k/v with bias) matches the composition", "[vk][matmul][fused]") {
  pair_fixture f;
  for (dtype t : {dtype::f32, dtype::f16, dtype::q8_0, dtype::q4_0, dtype::q4_K}) {
    const int64_t K = traits(t).block_elems == 256 ? 256 : 96;
    // Output widths: GQA 1 (equal), 4 and 8 (k/v a quarter or eighth of q), and ragged ones.
    for (auto [n1, n2, n3] : {std::tuple{64, 64, 64}, std::tuple{128, 32, 32}, std::tuple{256, 32, 32}, std::tuple{37, 9, 9}}) {
      const int64_t N = n1 + n2 + n3;
      auto w = f.make2(t, {K, N, 1, 1}, encode(t, randn(size_t(K * N), uint32_t(N)), K));
      auto bias = f.f32({N, 1, 1, 1}, randn(size_t(N), 4));
      for (int64_t T : {1, 3, 8, 9, 33}) {
        INFO("type " << traits(t).name << " n " << n1 << "/" << n2 << "/" << n3 << " T " << T);
        auto x = f.f32({K, T, 1, 1}, randn(size_t(K * T), uint32_t(T + 7)));
        auto y1 = f.make2(dtype::f32, {n1, T, 1, 1}), y2 = f.make2(dtype::f32, {n2, T, 1, 1}),
             y3 = f.make2(dtype::f32, {n3, T, 1, 1});
        for (bool with_bias : {false, true}) {
          f.run([&](backend& b, bool is_vk) {
            const tensor ys[] = {PICK(y1), PICK(y2), PICK(y3)};
            tensor none;
            none.ne = {0, 1, 1, 1};
            b.matmul_split(ys, PICK(w), PICK(x), with_bias ? PICK(bias) : none);
          });
          CHECK(f.err(y1) < 1e-5);
          CHECK(f.err(y2) < 1e-5);
          CHECK(f.err(y3) < 1e-5);
        }
      }
    }
  }
}

TEST_CASE("vk matmul_swiglu (stacked gate/up, silu*mul fused) matches the composition", "[vk][matmul][fused]") {
  pair_fixture f;
  for (dtype t : {dtype::f32, dtype::f16, dtype::q8_0, dtype::q4_0, dtype::q4_K}) {
    const int64_t K = traits(t).block_elems == 256 ? 256 : 64;
    // F: a multiple of every tile, one of 4 only, and odd (the unfused fallback on CPU tunings).
    for (int64_t F : {64, 36, 129}) {
      auto w = f.make2(t, {K, 2 * F, 1, 1}, encode(t, randn(size_t(K * 2 * F), uint32_t(F)), K));
      for (int64_t T : {1, 2, 7, 9, 33}) {
        INFO("type " << traits(t).name << " F " << F << " T " << T);
        auto x = f.f32({K, T, 1, 1}, randn(size_t(K * T), uint32_t(T + 3)));
        auto y = f.make2(dtype::f32, {F, T, 1, 1}), scratch = f.make2(dtype::f32, {F, T, 1, 1});
        f.run([&](backend& b, bool is_vk) { b.matmul_swiglu(PICK(y), PICK(w), PICK(x), PICK(scratch)); });
        CHECK(f.err(y) < 1e-5);
      }
    }
  }
}

namespace {
std::vector<float> scaled(std::vector<float> v, float s) {
  for (float& e : v) e *= s;
  return v;
}
}  // namespace

TEST_CASE("vk norm_matmul_split (rms_norm in the q/k/v matmul) matches the composition", "[vk][matmul][fused]") {
  pair_fixture f;
  tensor none;
  none.ne = {0, 1, 1, 1};
  for (dtype t : {dtype::f32, dtype::f16, dtype::q8_0, dtype::q4_0, dtype::q4_K}) {
    // K: whole 32-element chunks, and (float types) an odd K for the 4-wide path and its tail.
    for (int64_t K : {traits(t).block_elems == 256 ? int64_t{256} : int64_t{96}, int64_t{37}}) {
      if (K == 37 && traits(t).block_elems != 1) continue;
      for (auto [n1, n2, n3] : {std::tuple{64, 64, 64}, std::tuple{128, 32, 32}, std::tuple{37, 9, 9}}) {
        const int64_t N = n1 + n2 + n3;
        auto w = f.make2(t, {K, N, 1, 1}, encode(t, randn(size_t(K * N), uint32_t(N + K)), K));
        auto bias = f.f32({N, 1, 1, 1}, randn(size_t(N), 4));
        auto g = f.f32({K, 1, 1, 1}, randn(size_t(K), 5));
        for (int64_t T : {1, 3, 8, 9, 33}) {
          INFO("type " << traits(t).name << " K " << K << " n " << n1 << "/" << n2 << "/" << n3 << " T " << T);
          auto x = f.f32({K, T, 1, 1}, scaled(randn(size_t(K * T), uint32_t(T + 7)), 3.f));
          auto h = f.make2(dtype::f32, {K, T, 1, 1});
          auto y1 = f.make2(dtype::f32, {n1, T, 1, 1}), y2 = f.make2(dtype::f32, {n2, T, 1, 1}),
               y3 = f.make2(dtype::f32, {n3, T, 1, 1});
          for (bool with_bias : {false, true}) {
            f.run([&](backend& b, bool is_vk) {
              const tensor ys[] = {PICK(y1), PICK(y2), PICK(y3)};
              b.norm_matmul_split(ys, PICK(w), PICK(x), PICK(g), 1e-5f, with_bias ? PICK(bias) : none, PICK(h));
            });
            CHECK(f.err(y1) < 1e-5);
            CHECK(f.err(y2) < 1e-5);
            CHECK(f.err(y3) < 1e-5);
          }
        }
      }
    }
  }
}

TEST_CASE("vk norm_matmul_swiglu (rms_norm in the gate/up matmul) matches the composition", "[vk][matmul][fused]") {
  pair_fixture f;
  for (dtype t : {dtype::f32, dtype::f16, dtype::q8_0, dtype::q4_K}) {
    const int64_t K = traits(t).block_elems == 256 ? 256 : 64;
    auto g = f.f32({K, 1, 1, 1}, randn(size_t(K), 9));
    for (int64_t F : {64, 36, 129}) {
      auto w = f.make2(t, {K, 2 * F, 1, 1}, encode(t, randn(size_t(K * 2 * F), uint32_t(F)), K));
      for (int64_t T : {1, 2, 7, 9, 33}) {
        INFO("type " << traits(t).name << " F " << F << " T " << T);
        auto x = f.f32({K, T, 1, 1}, scaled(randn(size_t(K * T), uint32_t(T + 3)), 0.25f));
        auto h = f.make2(dtype::f32, {K, T, 1, 1});
        auto y = f.make2(dtype::f32, {F, T, 1, 1}), scratch = f.make2(dtype::f32, {F, T, 1, 1});
        f.run([&](backend& b, bool is_vk) {
          b.norm_matmul_swiglu(PICK(y), PICK(w), PICK(x), PICK(g), 1e-6f, PICK(h), PICK(scratch));
        });
        CHECK(f.err(y) < 1e-5);
      }
    }
  }
}

TEST_CASE("vk matmul_add (residual add in the matmul) matches the composition", "[vk][matmul][fused]") {
  pair_fixture f;
  for (dtype t : {dtype::f32, dtype::f16, dtype::q8_0, dtype::q4_0, dtype::q4_K}) {
    const int64_t K = traits(t).block_elems == 256 ? 256 : 96;
    for (int64_t N : {1, 67, 129}) {
      auto w = f.make2(t, {K, N, 1, 1}, encode(t, randn(size_t(K * N), uint32_t(N + 1)), K));
      for (int64_t T : {1, 2, 7, 8, 9, 33}) {
        INFO("type " << traits(t).name << " N " << N << " T " << T);
        auto x = f.f32({K, T, 1, 1}, randn(size_t(K * T), uint32_t(T + 11)));
        auto y = f.f32({N, T, 1, 1}, randn(size_t(N * T), uint32_t(T + 12)));
        auto scratch = f.make2(dtype::f32, {N, T, 1, 1});
        f.run([&](backend& b, bool is_vk) { b.matmul_add(PICK(y), PICK(w), PICK(x), PICK(scratch)); });
        CHECK(f.err(y) < 1e-5);
      }
    }
  }
}


TEST_CASE("vk rope_kv_store (q/k norm, rope, cache write) matches the composition", "[vk][rope][fused]") {
  pair_fixture f;
  const std::vector<int32_t> pos{0, 1, 7, 100, 1023}, slots{17, 3, 40, 63, 0};
  std::vector<float> ffv(64);
  for (size_t i = 0; i < ffv.size(); ++i) ffv[i] = 1.f + 0.25f * float(i % 5);
  twin none;
  none.r.ne = none.v.ne = {0, 1, 1, 1};
  for (dtype ct : {dtype::f32, dtype::f16, dtype::q8_0})
    for (auto [H, Hkv, D] : {std::tuple{4, 4, 64}, std::tuple{8, 2, 64}, std::tuple{8, 1, 128}, std::tuple{6, 3, 32}})
      for (auto mode : {rope_mode::normal, rope_mode::neox})
        for (bool partial : {false, true})
          for (bool norm : {false, true})
            for (int64_t T : {1, 5}) {
              INFO("cache " << traits(ct).name << " H " << H << " Hkv " << Hkv << " D " << D << " mode " << int(mode)
                            << " partial " << partial << " norm " << norm << " T " << T);
              const int64_t W = int64_t(Hkv) * D, n_dims = partial ? D / 2 : D;
              auto q = f.f32({H * D, T, 1, 1}, randn(size_t(H * D * T), uint32_t(D + T), 2.f));
              auto k = f.f32({W, T, 1, 1}, randn(size_t(W * T), uint32_t(D + T + 1), 2.f));
              auto v = f.f32({W, T, 1, 1}, randn(size_t(W * T), uint32_t(D + T + 2)));
              auto kc = f.cache2(ct, {W, 64, 1, 1}, encode(ct, std::vector<float>(size_t(W * 64), 0.5f), W));
              auto vc = f.cache2(ct, {W, 64, 1, 1}, encode(ct, std::vector<float>(size_t(W * 64), 0.5f), W));
              auto tp = f.i32({T, 1, 1, 1}, std::vector<int32_t>(pos.begin(), pos.begin() + T));
              auto ts = f.i32({T, 1, 1, 1}, std::vector<int32_t>(slots.begin(), slots.begin() + T));
              auto ff = f.f32({n_dims / 2, 1, 1, 1}, std::vector<float>(ffv.begin(), ffv.begin() + n_dims / 2));
              auto qn = f.f32({D, 1, 1, 1}, randn(size_t(D), 8)), kn = f.f32({D, 1, 1, 1}, randn(size_t(D), 9));
              const rope_params p{mode, int(n_dims), 10000.f, 1.f};
              f.run([&](backend& b, bool is_vk) {
                b.rope_kv_store(PICK(q), PICK(k), PICK(v), PICK(kc), PICK(vc), PICK(tp), PICK(ts), int(D), p,
                                partial ? PICK(ff) : PICK(none), norm ? PICK(qn) : PICK(none), norm ? PICK(kn) : PICK(none),
                                1e-6f);
              });
              // float theta at positions up to 1023; q8_0: a value that lands within float error
              // of a rounding midpoint may quantize one step (d = amax / 127) apart.
              const double tol = ct == dtype::q8_0 ? 1.0 / 127 + 1e-3 : ct == dtype::f16 ? 2e-3 : 2e-4;
              CHECK(f.err(q) < 2e-4);
              CHECK(rel_err(read_cache(f.vk, kc.v), read_cache(*f.ref, kc.r)) < tol);
              CHECK(rel_err(read_cache(f.vk, vc.v), read_cache(*f.ref, vc.r)) < tol);
            }
}

TEST_CASE("vk q8_0 KV cache: kv_store quantizes, attention dequantizes, as gpu/ref", "[vk][attention][kvq8]") {
  pair_fixture f;
  // GQA 1, 4 and 8; D = 96 makes rows of an odd number of blocks (blocks at 2 mod 4 bytes);
  // D = 256 (Gemma's) takes the workgroup kernel on every tuning.
  for (auto [H, Hkv, D] : {std::tuple{4, 4, 32}, std::tuple{8, 2, 64}, std::tuple{8, 1, 128}, std::tuple{3, 3, 96},
                           std::tuple{8, 1, 32}, std::tuple{2, 1, 256}}) {
    INFO("H " << H << " Hkv " << Hkv << " D " << D);
    const int B = 16, maxb = 17, n_blocks = 80, W = Hkv * D;
    // Seven sequences decoding at contexts 1, 15, 16, 17, 255, 256, 257 and one prefill of 17
    // tokens; their blocks scattered over the pool (the c-th block used: 37 c mod 80).
    const std::vector<int> ctx{1, 15, 16, 17, 255, 256, 257};
    const int S = int(ctx.size()) + 1;
    std::vector<int32_t> bt(size_t(S * maxb), 0);
    int used = 0;
    for (int s = 0; s < S; ++s) {
      const int n = s < S - 1 ? (ctx[size_t(s)] + B - 1) / B : 2;
      for (int i = 0; i < n; ++i) bt[size_t(s * maxb + i)] = (37 * used++) % n_blocks;
    }
    REQUIRE(used <= n_blocks);
    auto slot_of = [&](int s, int p) { return bt[size_t(s * maxb + p / B)] * B + p % B; };
    std::vector<int32_t> hs, seq, pos, ss;
    for (int s = 0; s < S - 1; ++s) {
      for (int p = 0; p + 1 < ctx[size_t(s)]; ++p) hs.push_back(slot_of(s, p));
      seq.push_back(s), pos.push_back(ctx[size_t(s)] - 1);
    }
    for (int p = 0; p < 17; ++p) seq.push_back(S - 1), pos.push_back(p);
    for (size_t i = 0; i < seq.size(); ++i) ss.push_back(slot_of(seq[i], pos[i]));
    const int64_t Th = int64_t(hs.size()), T = int64_t(seq.size());
    // Zeroed (the comparison reads the slots never written too).
    const auto zero = encode(dtype::q8_0, std::vector<float>(size_t(W) * n_blocks * B, 0.f), W);
    auto kc = f.cache2(dtype::q8_0, {W, n_blocks * B, 1, 1}, zero), vc = f.cache2(dtype::q8_0, {W, n_blocks * B, 1, 1}, zero);
    auto hk = f.f32({W, Th, 1, 1}, randn(size_t(W * Th), 41, 3.f)), hv = f.f32({W, Th, 1, 1}, randn(size_t(W * Th), 42));
    auto ths = f.i32({Th, 1, 1, 1}, hs);
    auto k = f.f32({W, T, 1, 1}, randn(size_t(W * T), 43, 3.f)), v = f.f32({W, T, 1, 1}, randn(size_t(W * T), 44));
    auto q = f.f32({int64_t(H) * D, T, 1, 1}, randn(size_t(H * D * T), 45));
    auto tbt = f.i32({maxb, S, 1, 1}, bt), ts = f.i32({T, 1, 1, 1}, ss), tseq = f.i32({T, 1, 1, 1}, seq),
         tpos = f.i32({T, 1, 1, 1}, pos);
    auto out = f.make2(dtype::f32, {int64_t(H) * D, T, 1, 1});
    for (auto [window, softcap] : {std::pair{0, 0.f}, std::pair{16, 0.f}, std::pair{0, 1.5f}}) {
      INFO("window " << window << " softcap " << softcap);
      attention_params ap{H, Hkv, D, B, maxb, 1.f / std::sqrt(float(D))};
      ap.window = window;
      ap.softcap = softcap;
      f.run([&](backend& b, bool is_vk) {
        b.kv_store(PICK(kc), PICK(vc), PICK(hk), PICK(hv), PICK(ths));
        b.kv_store(PICK(kc), PICK(vc), PICK(k), PICK(v), PICK(ts));
        b.attention(PICK(out), PICK(q), PICK(kc), PICK(vc), PICK(tbt), PICK(tseq), PICK(tpos), ap);
      });
      // The caches: the same blocks (a value within float error of a rounding midpoint may
      // land one step, d = amax / 127, apart); attention over them as the reference's.
      CHECK(rel_err(read_cache(f.vk, kc.v), read_cache(*f.ref, kc.r)) < 1.0 / 127 + 1e-4);
      CHECK(rel_err(read_cache(f.vk, vc.v), read_cache(*f.ref, vc.r)) < 1.0 / 127 + 1e-4);
      CHECK(f.err(out) < 2e-3);
    }
  }
}

TEST_CASE("vk step counters: dispatches, barriers only at hazards, one submit, bytes", "[vk][counters]") {
  pair_fixture f;
  const int64_t K = 64, N = 32;
  auto w = f.make2(dtype::f32, {K, N, 1, 1}, as_bytes(randn(size_t(K * N), 1)));
  auto x = f.f32({K, 1, 1, 1}, randn(size_t(K), 2));
  auto a = f.make2(dtype::f32, {N, 1, 1, 1}), b2 = f.make2(dtype::f32, {N, 1, 1, 1}), c = f.make2(dtype::f32, {N, 1, 1, 1});
  const std::vector<float> host(size_t(K), 1.f);
  f.vk.begin_step();
  REQUIRE(f.vk.upload(x.v, as_bytes(host)).ok());
  f.vk.matmul(a.v, w.v, x.v);   // after the upload of x: a barrier
  f.vk.matmul(b2.v, w.v, x.v);  // reads what the last one read: none
  f.vk.add(c.v, a.v, b2.v);     // reads a and b2, written since the barrier: a barrier
  REQUIRE(f.vk.submit().ok());
  std::vector<float> out(static_cast<size_t>(N));
  REQUIRE(f.vk.download(c.v, std::as_writable_bytes(std::span<float>(out))).ok());
  const step_stats s = f.vk.last_step_stats();
  CHECK(s.dispatches == 3);
  CHECK(s.barriers == 2);
  CHECK(s.submits >= 1);
  CHECK(s.fence_waits == s.submits);
  CHECK(s.bytes_uploaded == uint64_t(K) * 4);
  CHECK(s.bytes_downloaded == uint64_t(N) * 4);
  CHECK(s.bytes_moved >= 2 * uint64_t(K * N) * 4);
  f.vk.begin_step();  // a new step starts from zero
  CHECK(f.vk.last_step_stats().dispatches == 0);
  REQUIRE(f.vk.submit().ok());
}
