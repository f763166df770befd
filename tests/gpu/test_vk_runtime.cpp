// Vulkan backend runtime behaviour: command-buffer reuse, in-step uploads, views, errors.
#include <cstdlib>

#include "gpu/vk/context.hpp"
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

TEST_CASE("vk weight tensors download as uploaded, whatever layout the device keeps", "[vk][runtime]") {
  // On CPU devices q8_0 is stored planar (quants, then f32 scales); download converts back.
  backend& b = *g_vk;
  for (dtype t : {dtype::q8_0, dtype::f16, dtype::q4_K}) {
    INFO("type " << traits(t).name);
    const int64_t K = traits(t).block_elems == 256 ? 256 : 96, N = 7;
    const auto bytes = encode(t, randn(size_t(K * N), 9), K);
    auto w = b.alloc(t, {K, N, 1, 1}, "w");
    REQUIRE(w.ok());
    REQUIRE(b.upload(*w, bytes).ok());
    std::vector<std::byte> back(bytes.size());
    REQUIRE(b.download(*w, back).ok());
    CHECK(back == bytes);
  }
  // A q8_0 tensor is uploaded whole: a partial upload is refused on devices that repack it,
  // and lands as given elsewhere; either way the call reports it rather than corrupting data.
  auto w = b.alloc(dtype::q8_0, {64, 2, 1, 1}, "w");
  REQUIRE(w.ok());
  const auto bytes = encode(dtype::q8_0, randn(128, 4), 64);
  const auto part = std::span<const std::byte>(bytes).subspan(68);  // row 1
  if (b.upload(*w, part, 68).ok()) {
    REQUIRE(b.upload(*w, std::span<const std::byte>(bytes).first(68), 0).ok());
    std::vector<std::byte> back(bytes.size());
    REQUIRE(b.download(*w, back).ok());
    CHECK(back == bytes);
  }
}

TEST_CASE("device selection: type order, index, name substring", "[vk][device]") {
  using vks::gpu::vk::device_candidate;
  using vks::gpu::vk::select_device;
  const uint32_t v12 = VK_API_VERSION_1_2, v11 = VK_API_VERSION_1_1;
  const std::vector<device_candidate> devs = {
      {"llvmpipe (LLVM 15)", VK_PHYSICAL_DEVICE_TYPE_CPU, v12},
      {"Intel(R) UHD Graphics", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, v12},
      {"NVIDIA H100", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, v12},
      {"Old Discrete", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, v11},
      {"Virtio-GPU Venus", VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, v12},
  };
  CHECK(select_device(devs, "") == 2);  // discrete first; the 1.1 device never qualifies
  CHECK(select_device(std::span(devs).first(2), "") == 1);  // then integrated
  CHECK(select_device(std::vector<device_candidate>{devs[0], devs[4]}, "") == 1);  // virtual > cpu
  CHECK(select_device(std::span(devs).first(1), "") == 0);  // lavapipe as the last resort
  CHECK(select_device(devs, "0") == 0);
  CHECK(select_device(devs, "4") == 4);
  CHECK(select_device(devs, "3") == -1);  // below Vulkan 1.2
  CHECK(select_device(devs, "17") == -1);
  CHECK(select_device(devs, "LLVMPIPE") == 0);
  CHECK(select_device(devs, "graphics") == 1);
  CHECK(select_device(devs, "old") == -1);
  CHECK(select_device(devs, "radeon") == -1);
  CHECK(select_device({}, "") == -1);
}

TEST_CASE("vk backend honours --device: index, name, no match", "[vk][device]") {
  vk_options o;
  o.device = "0";
  auto a = make_vk_backend(o);
  REQUIRE(a.ok());
  o.device = (*a)->info().name.substr(0, 3);
  auto b = make_vk_backend(o);
  REQUIRE(b.ok());
  CHECK((*b)->info().name == (*a)->info().name);
  for (const char* bad : {"97", "no-such-device"}) {
    o.device = bad;
    auto c = make_vk_backend(o);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == vks::errc::not_found);
    CHECK_THAT(c.error().message, Catch::Contains(bad));
  }
}

TEST_CASE("vk matmul grids wider than maxComputeWorkGroupCount[0] fold into z", "[vk][runtime][limits]") {
  // A backend whose x limit is lowered to 3 workgroups: every matmul mode folds its row tiles
  // into z and must still equal the reference; a kernel that cannot fold fails the step with
  // one line instead of dispatching.
  vk_options o;
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;
  o.max_groups_x = 3;
  auto made = make_vk_backend(o);
  REQUIRE(made.ok());
  backend& vk = **made;
  pair_fixture f{vk.info().q8_1_activations ? make_ref_backend_q8_1() : make_ref_backend(), vk};  // q8_1: its twin
  const int64_t K = 64, N = 1000;
  tensor none;
  none.ne = {0, 1, 1, 1};
  for (dtype t : {dtype::f32, dtype::q8_0, dtype::q4_K}) {
    const int64_t Kt = traits(t).block_elems == 256 ? 256 : K;
    auto w = f.make2(t, {Kt, N, 1, 1}, encode(t, randn(size_t(Kt * N), 3), Kt));
    auto g = f.make2(dtype::f32, {Kt, 1, 1, 1}, as_bytes(randn(size_t(Kt), 4)));
    for (int64_t T : {1, 9}) {
      INFO("type " << traits(t).name << " T " << T);
      auto x = f.make2(dtype::f32, {Kt, T, 1, 1}, as_bytes(randn(size_t(Kt * T), 5)));
      auto y = f.make2(dtype::f32, {N, T, 1, 1}), h = f.make2(dtype::f32, {Kt, T, 1, 1});
      auto sw = f.make2(dtype::f32, {N / 2, T, 1, 1}), up = f.make2(dtype::f32, {N / 2, T, 1, 1});
      auto acc = f.make2(dtype::f32, {N, T, 1, 1}, as_bytes(randn(size_t(N * T), 6)));
      auto scr = f.make2(dtype::f32, {N, T, 1, 1});
      f.run([&](backend& b, bool is_vk) {
        b.matmul(PICK(y), PICK(w), PICK(x));
        b.norm_matmul_swiglu(PICK(sw), PICK(w), PICK(x), PICK(g), 1e-5f, PICK(h), PICK(up));
        b.matmul_add(PICK(acc), PICK(w), PICK(x), PICK(scr));
      });
      CHECK(f.err(y) < 1e-5);
      CHECK(f.err(sw) < 1e-5);
      CHECK(f.err(acc) < 1e-5);
    }
  }
  // The row kernels fold too (one workgroup or invocation per row).
  auto x = f.make2(dtype::f32, {16, 1000, 1, 1}, as_bytes(randn(16 * 1000, 7)));
  auto b = f.make2(dtype::f32, {16, 1000, 1, 1}, as_bytes(randn(16 * 1000, 9)));
  auto nw = f.make2(dtype::f32, {16, 1, 1, 1}, as_bytes(randn(16, 8)));
  auto y = f.make2(dtype::f32, {16, 1000, 1, 1}), sm = f.make2(dtype::f32, {16, 1000, 1, 1});
  auto am = f.make2(dtype::i32, {1000, 1, 1, 1});
  f.run([&](backend& be, bool is_vk) {
    be.add_rms_norm(PICK(x), PICK(b), PICK(y), PICK(nw), 1e-5f);
    be.rms_norm(PICK(b), PICK(x), PICK(nw), 1e-5f);
    be.softmax(PICK(sm), PICK(b));
    be.argmax(PICK(am), PICK(b));
  });
  CHECK(f.err(x) < 1e-5);
  CHECK(f.err(y) < 1e-5);
  CHECK(f.err(b) < 1e-5);
  CHECK(f.err(sm) < 1e-5);
  CHECK(read_i32(vk, am.v) == read_i32(*f.ref, am.r));
  // Attention has no fold: 512 heads are more than 3 workgroups under every tuning.
  const int64_t Ha = 512, Da = 32;
  auto qa = f.make2(dtype::f32, {Ha * Da, 1, 1, 1}, as_bytes(randn(size_t(Ha * Da), 10)));
  auto kca = f.make2(dtype::f32, {Ha * Da, 16, 1, 1}, as_bytes(randn(size_t(Ha * Da * 16), 11)));
  auto oa = f.make2(dtype::f32, {Ha * Da, 1, 1, 1});
  const std::vector<int32_t> zero{0};
  auto bt = f.make2(dtype::i32, {1, 1, 1, 1}, as_bytes(zero)), sq = f.make2(dtype::i32, {1, 1, 1, 1}, as_bytes(zero)),
       ps = f.make2(dtype::i32, {1, 1, 1, 1}, as_bytes(zero));
  attention_params ap;
  ap.n_head = ap.n_kv_head = int(Ha);
  ap.head_dim = int(Da);
  ap.max_blocks_per_seq = 1;
  ap.scale = 0.2f;
  vk.begin_step();
  vk.attention(oa.v, qa.v, kca.v, kca.v, bt.v, sq.v, ps.v, ap);
  auto r = vk.submit();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("maxComputeWorkGroupCount") != std::string::npos);
  CHECK(r.error().message.find('\n') == std::string::npos);
}

TEST_CASE("vk rope, kv_store, rope_kv_store and get_rows fold x into z and chunk rows over y", "[vk][runtime][limits]") {
  // maxComputeWorkGroupCount lowered to 1 x 2: each kernel folds its columns (or head rows)
  // into z and runs 5 tokens / gathered rows as chunks of 2, 2 and 1; all equal the reference.
  vk_options o;
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;
  o.max_groups_x = 1;
  o.max_groups_y = 2;
  auto made = make_vk_backend(o);
  REQUIRE(made.ok());
  backend& vk = **made;
  pair_fixture f{make_ref_backend(), vk};
  const int64_t T = 5, H = 8, Hkv = 4, D = 64, W = Hkv * D;
  const std::vector<int32_t> pos{0, 3, 9, 100, 1023}, slots{17, 3, 40, 31, 0};
  auto tp = f.make2(dtype::i32, {T, 1, 1, 1}, as_bytes(pos)), ts = f.make2(dtype::i32, {T, 1, 1, 1}, as_bytes(slots));
  tensor none;
  none.ne = {0, 1, 1, 1};
  const rope_params rp{rope_mode::neox, int(D), 10000.f, 1.f};
  for (bool fused : {false, true}) {
    INFO("fused " << fused);
    auto q = f.make2(dtype::f32, {H * D, T, 1, 1}, as_bytes(randn(size_t(H * D * T), 1)));
    auto k = f.make2(dtype::f32, {W, T, 1, 1}, as_bytes(randn(size_t(W * T), 2)));
    auto v = f.make2(dtype::f32, {W, T, 1, 1}, as_bytes(randn(size_t(W * T), 3)));
    auto kc = f.make2(dtype::f32, {W, 48, 1, 1}, as_bytes(std::vector<float>(size_t(W * 48), 0.5f)));
    auto vc = f.make2(dtype::f32, {W, 48, 1, 1}, as_bytes(std::vector<float>(size_t(W * 48), 0.5f)));
    f.run([&](backend& b, bool is_vk) {
      if (fused) {
        b.rope_kv_store(PICK(q), PICK(k), PICK(v), PICK(kc), PICK(vc), PICK(tp), PICK(ts), int(D), rp, none, none, none, 1e-6f);
        return;
      }
      tensor q3 = PICK(q), k3 = PICK(k);
      q3.ne = {D, H, T, 1};
      k3.ne = {D, Hkv, T, 1};
      b.rope(q3, PICK(tp), rp, none);
      b.rope(k3, PICK(tp), rp, none);
      b.kv_store(PICK(kc), PICK(vc), PICK(k), PICK(v), PICK(ts));
    });
    CHECK(f.err(q) < 2e-4);
    CHECK(f.err(kc) < 2e-4);
    CHECK(f.err(vc) < 1e-6);
  }
  const std::vector<int32_t> rows{3, 0, 7, 7, 1};
  auto idx = f.make2(dtype::i32, {T, 1, 1, 1}, as_bytes(rows));
  for (dtype t : {dtype::f32, dtype::q8_0, dtype::q4_K}) {
    INFO("table " << traits(t).name);
    const int64_t C = 512;
    auto table = f.make2(t, {C, 8, 1, 1}, encode(t, randn(size_t(C * 8), 4), C));
    auto out = f.make2(dtype::f32, {C, T, 1, 1});
    f.run([&](backend& b, bool is_vk) { b.get_rows(PICK(out), PICK(table), PICK(idx)); });
    CHECK(f.err(out) < 1e-6);
  }
}
