// The step's read-back and device-side selections against gpu/ref: top_k (every row size
// across the chunk and merge edges, ties, NaN, -inf, padding), argmax with NaN, and
// download_after (results land at submit, inside the step's one submission, also when the
// step's command buffer is reused); device limits as errors; the pipeline cache on disk.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "vk_fixture.hpp"

using namespace vks::gpu;
using namespace vks::gpu::test;

namespace {

// Row r of V values: normal noise, quantised to 1/4 so ties are common; some NaN and -inf.
std::vector<float> tie_rows(int64_t V, int64_t R, uint32_t seed) {
  auto v = randn(static_cast<size_t>(V * R), seed, 3.f);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = std::round(v[i] * 4.f) / 4.f;
    if (i % 97 == 5) v[i] = std::numeric_limits<float>::quiet_NaN();
    if (i % 89 == 7) v[i] = -std::numeric_limits<float>::infinity();
  }
  return v;
}

}  // namespace

TEST_CASE("vk top_k equals ref: sorted, ties by lower index, NaN as -inf, padded", "[vk][select]") {
  pair_fixture f;
  for (int64_t V : {5, 300, 2049, 20000, 49152}) {
    for (int64_t R : {1, 3}) {
      auto x = f.f32({V, R, 1, 1}, tie_rows(V, R, static_cast<uint32_t>(V + R)));
      for (int k : {1, 7, 64, 256}) {
        INFO("V " << V << " R " << R << " k " << k);
        auto vals = f.make2(dtype::f32, {k, R, 1, 1});
        auto ids = f.make2(dtype::i32, {k, R, 1, 1});
        f.run([&](backend& b, bool is_vk) { b.top_k(PICK(vals), PICK(ids), PICK(x), k); });
        const auto rv = read_f32(*f.ref, vals.r), vv = read_f32(f.vk, vals.v);
        const auto ri = read_i32(*f.ref, ids.r), vi = read_i32(f.vk, ids.v);
        CHECK(vi == ri);
        bool same_vals = true;
        for (size_t i = 0; i < rv.size(); ++i) same_vals = same_vals && (rv[i] == vv[i] || (std::isinf(rv[i]) && rv[i] == vv[i]));
        CHECK(same_vals);
        // The reference itself: descending, ties by lower index, padding (-inf, V) last.
        for (int64_t r = 0; r < R; ++r)
          for (int j = 1; j < k; ++j) {
            const size_t a = static_cast<size_t>(r * k + j - 1), c = a + 1;
            CHECK((rv[a] > rv[c] || (rv[a] == rv[c] && ri[a] < ri[c]) || (ri[a] == V && ri[c] == V)));
          }
        if (V < k) CHECK(ri[static_cast<size_t>(k - 1)] == V);
      }
    }
  }
}

TEST_CASE("vk top_k of long rows and of an ascending row (a sort every round) equals ref", "[vk][select]") {
  pair_fixture f;
  // Row 0: Qwen's vocabulary of noise (594 rounds: lavapipe's loop limiter would cut a loop
  // per element); row 1: ascending with ties in threes, so every round sorts.
  const int64_t V = 151936;
  std::vector<float> v = randn(static_cast<size_t>(2 * V), 9);
  for (size_t i = 0; i < 20000; ++i) v[static_cast<size_t>(V) + i] = static_cast<float>(i / 3);
  for (size_t i = 20000; i < static_cast<size_t>(V); ++i) v[static_cast<size_t>(V) + i] = -1.f;
  auto x = f.f32({V, 2, 1, 1}, v);
  const int k = 256;
  auto vals = f.make2(dtype::f32, {k, 2, 1, 1});
  auto ids = f.make2(dtype::i32, {k, 2, 1, 1});
  f.run([&](backend& b, bool is_vk) { b.top_k(PICK(vals), PICK(ids), PICK(x), k); });
  CHECK(read_i32(f.vk, ids.v) == read_i32(*f.ref, ids.r));
  CHECK(read_f32(f.vk, vals.v) == read_f32(*f.ref, vals.r));
  CHECK(read_i32(f.vk, ids.v)[k] == 19998);
}

TEST_CASE("vk argmax skips NaN like the sampler; a row of NaN gives 0", "[vk][select]") {
  pair_fixture f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x(3 * 300, 1.f);
  x[0] = nan;                                                      // row 0: NaN first, max at 150
  x[150] = 4.f;
  for (size_t i = 300; i < 600; ++i) x[i] = nan;                  // row 1: all NaN
  for (size_t i = 600; i < 900; ++i) x[i] = -std::numeric_limits<float>::infinity();  // row 2: all -inf
  x[601] = nan;
  auto tx = f.f32({300, 3, 1, 1}, x);
  auto am = f.make2(dtype::i32, {3, 1, 1, 1});
  f.run([&](backend& b, bool is_vk) { b.argmax(PICK(am), PICK(tx)); });
  CHECK(read_i32(f.vk, am.v) == std::vector<int32_t>{150, 0, 0});
  CHECK(read_i32(*f.ref, am.r) == std::vector<int32_t>{150, 0, 0});
}

TEST_CASE("vk download_after delivers results at submit, in the step, with reused command buffers", "[vk][select]") {
  pair_fixture f;
  const int64_t K = 64, N = 40;
  auto w = f.f32({K, N, 1, 1}, randn(size_t(K * N), 3));
  auto x = f.make2(dtype::f32, {K, 1, 1, 1});
  auto y = f.make2(dtype::f32, {N, 1, 1, 1});
  auto am = f.make2(dtype::i32, {1, 1, 1, 1});
  for (uint32_t round = 0; round < 3; ++round) {  // the same ops each round: the command buffer is reused
    INFO("round " << round);
    const auto xv = randn(size_t(K), 50 + round);
    std::vector<float> yr(N), yv(N, -7.f), tail(N / 2, -7.f);
    int32_t ar = -1, av = -1;
    for (bool is_vk : {false, true}) {
      backend& b = is_vk ? f.vk : *f.ref;
      b.begin_step();
      REQUIRE(b.upload(PICK(x), as_bytes(xv)).ok());
      b.matmul(PICK(y), PICK(w), PICK(x));
      b.argmax(PICK(am), PICK(y));
      b.download_after(PICK(y), std::as_writable_bytes(std::span(is_vk ? yv : yr)));
      b.download_after(PICK(y).view({N, 1, 1, 1}), std::as_writable_bytes(std::span(tail)));  // a shorter dst: a prefix
      b.download_after(PICK(am), std::as_writable_bytes(std::span(is_vk ? &av : &ar, 1)));
      REQUIRE(b.submit().ok());
    }
    CHECK(rel_err(yv, yr) < 1e-5);
    CHECK(yv == read_f32(f.vk, y.v));
    CHECK(std::equal(tail.begin(), tail.end(), yv.begin()));
    CHECK(av == ar);
    CHECK(av == static_cast<int32_t>(std::max_element(yv.begin(), yv.end()) - yv.begin()));
  }
}

TEST_CASE("vk a dispatch over maxComputeWorkGroupCount fails its step with one clear line; the next step runs", "[vk][limits]") {
  backend& b = *g_vk;
  const int64_t R = 70000;  // argmax: one workgroup per row, over the 65535 every device allows
  auto x = make(b, dtype::f32, {1, R, 1, 1}, {});
  auto am = make(b, dtype::i32, {R, 1, 1, 1}, {});
  b.begin_step();
  b.argmax(am, x);
  auto r = b.submit();
  if (r) {
    SUCCEED("this device dispatches 70000 workgroups in x");
  } else {
    CHECK(r.error().message.find("maxComputeWorkGroupCount") != std::string::npos);
    CHECK(r.error().message.find('\n') == std::string::npos);
  }
  pair_fixture f;  // the backend still works
  auto y = f.f32({4, 1, 1, 1}, {1.f, 3.f, 2.f, 3.f});
  auto a1 = f.make2(dtype::i32, {1, 1, 1, 1});
  f.run([&](backend& bb, bool is_vk) { bb.argmax(PICK(a1), PICK(y)); });
  CHECK(read_i32(f.vk, a1.v)[0] == 1);
}

TEST_CASE("vk pipeline cache persists on disk and survives a corrupt or foreign file", "[vk][limits]") {
  char tmpl[] = "/tmp/vks-pcache-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  vk_options o;
  o.pipeline_cache_dir = dir;
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;
  auto one_step = [&] {
    auto be = make_vk_backend(o);
    REQUIRE(be.ok());
    auto x = make(**be, dtype::f32, {8, 1, 1, 1}, as_bytes(std::vector<float>{0, 1, 9, 2, 3, 4, 5, 6}));
    auto am = make(**be, dtype::i32, {1, 1, 1, 1}, {});
    (*be)->begin_step();
    (*be)->argmax(am, x);
    REQUIRE((*be)->submit().ok());
    CHECK(read_i32(**be, am)[0] == 2);
  };
  auto cache_files = [&] {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(dir)) v.push_back(e.path().string());
    return v;
  };
  one_step();
  auto files = cache_files();
  REQUIRE(files.size() == 1);
  CHECK(std::filesystem::file_size(files[0]) >= 32);  // the header at least (lavapipe stores nothing more)
  one_step();  // read back: works the same
  std::string valid;
  {
    std::ifstream in(files[0], std::ios::binary);
    valid.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << valid.substr(0, 32) << std::string(300, '\x7f');
  one_step();  // this device's header, a corrupt body: the driver's to refuse or ignore
  for (const std::string junk : {std::string("short"), std::string(4096, 'x')}) {
    std::ofstream(files[0], std::ios::binary | std::ios::trunc) << junk;
    one_step();  // ignored with a warning
  }
  std::ofstream(files[0], std::ios::binary | std::ios::trunc).write("\x20\0\0\0\x01\0\0\0", 8);  // header only, cut
  one_step();
  std::filesystem::remove_all(dir);
}
