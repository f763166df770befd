// The shared Vulkan backend of test_gpu_vk (created in test_vk_main.cpp) and a helper that
// mirrors every tensor into a fresh reference backend.
#pragma once

#include "gpu/ref/ref_q8_1.hpp"
#include "harness.hpp"

namespace vks::gpu::test {

extern backend* g_vk;

struct twin {
  tensor r, v;  // the same tensor in the ref and the vk backend
};

struct pair_fixture {
  // gpu/ref's q8_1 twin where the vk backend quantizes activations (a GPU's own tuning row
  // with integer dot products, or VKS_VK_TUNING gpu:N:q8 / gpu:N:q8i).
  std::unique_ptr<backend> ref = g_vk->info().q8_1_activations ? make_ref_backend_q8_1() : make_ref_backend();
  backend& vk = *g_vk;

  twin make2(dtype t, std::array<int64_t, 4> ne, std::span<const std::byte> data = {}) {
    return {make(*ref, t, ne, data), make(vk, t, ne, data)};
  }
  // A KV cache tensor: named as model/kv_cache names them, which gpu/vk keeps in GGUF blocks.
  twin cache2(dtype t, std::array<int64_t, 4> ne, std::span<const std::byte> data = {}) {
    twin r;
    for (auto [b, out] : {std::pair{ref.get(), &r.r}, std::pair{&vk, &r.v}}) {
      auto c = b->alloc(t, ne, "k_cache.test");
      REQUIRE(c.ok());
      if (!data.empty()) REQUIRE(b->upload(*c, data).ok());
      *out = *c;
    }
    return r;
  }
  twin f32(std::array<int64_t, 4> ne, const std::vector<float>& v) { return make2(dtype::f32, ne, as_bytes(v)); }
  twin i32(std::array<int64_t, 4> ne, const std::vector<int32_t>& v) { return make2(dtype::i32, ne, as_bytes(v)); }
  template <class F>
  void run(F&& f) {  // f(backend&, bool is_vk) records the same ops on both
    ref->begin_step();
    f(*ref, false);
    REQUIRE(ref->submit().ok());
    vk.begin_step();
    f(vk, true);
    auto r = vk.submit();
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r.ok());
  }
  double err(const twin& t, double floor = 1e-6) { return rel_err(read_f32(vk, t.v), read_f32(*ref, t.r), floor); }
};

#define PICK(tw) (is_vk ? (tw).v : (tw).r)

}  // namespace vks::gpu::test
