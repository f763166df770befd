// Device-side sampling equals the CPU sampler: on fixed logits rows (noise, ties, peaks,
// NaN and -inf, vocabularies smaller than the candidate count), for every sampling option
// that takes the candidate path (greedy via argmax; temperature with top_k / top_p / min_p
// via top-k candidates), the engine's choice (sampler::sample_candidates, falling back to
// sample() over the whole row when it cannot prove equality) draws the same tokens as
// sample() over the whole row, seed for seed. Candidates come from gpu::backend::top_k and
// argmax on the reference backend and, where a Vulkan device exists (lavapipe), on it too.
#include "catch.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "engine/sampler.hpp"
#include "gpu/backend.hpp"

using namespace vks;
using namespace vks::engine;

namespace {

std::vector<std::vector<float>> fixed_rows(int64_t V) {
  std::mt19937 g(static_cast<uint32_t>(V));
  std::normal_distribution<float> n(0.f, 3.f);
  std::vector<std::vector<float>> rows(5, std::vector<float>(static_cast<size_t>(V)));
  for (size_t i = 0; i < static_cast<size_t>(V); ++i) {
    rows[0][i] = n(g);                                  // noise
    rows[1][i] = std::round(n(g) * 2.f) / 2.f;          // ties everywhere
    rows[2][i] = n(g) * 0.2f + (i == 7 ? 12.f : 0.f);   // one peak
    rows[3][i] = i % 13 == 0 ? -std::numeric_limits<float>::infinity()
                 : i % 17 == 0 ? std::numeric_limits<float>::quiet_NaN() : n(g);
    rows[4][i] = static_cast<float>(i % 40) * 0.01f;    // many exact ties at the top
  }
  return rows;
}

struct selector {
  gpu::backend& be;
  int64_t V;
  gpu::tensor x, vals, ids, am;
  selector(gpu::backend& b, int64_t v) : be(b), V(v) {
    x = *be.alloc(gpu::dtype::f32, {V, 1, 1, 1}, "x");
    vals = *be.alloc(gpu::dtype::f32, {256, 1, 1, 1}, "vals");
    ids = *be.alloc(gpu::dtype::i32, {256, 1, 1, 1}, "ids");
    am = *be.alloc(gpu::dtype::i32, {1, 1, 1, 1}, "am");
  }
  // One step: the row uploaded, argmax and top-k candidates read back in the step.
  void run(const std::vector<float>& row, int k, int32_t& arg, std::vector<float>& cv, std::vector<token_id>& ci) {
    cv.resize(static_cast<size_t>(k));
    ci.resize(static_cast<size_t>(k));
    gpu::tensor v = vals, i = ids;
    v.ne = i.ne = {k, 1, 1, 1};
    be.begin_step();
    REQUIRE(be.upload(x, std::as_bytes(std::span(row))).ok());
    be.argmax(am, x);
    be.top_k(v, i, x, k);
    be.download_after(am, std::as_writable_bytes(std::span(&arg, 1)));
    be.download_after(v, std::as_writable_bytes(std::span(cv)));
    be.download_after(i, std::as_writable_bytes(std::span(ci)));
    REQUIRE(be.submit().ok());
  }
};

// The engine's request to the runner for this sampler's row (llm_engine::need_of).
int candidates_for(const sampling_params& p) {
  if (p.top_k > 0 && p.top_k < 256) return std::min(256, std::max(32, 2 * p.top_k));
  return p.min_p > 0.f && p.top_p < 1.f ? 256 : 0;
}

void check_backend(gpu::backend& be) {
  int via_candidates = 0, fallbacks = 0, steps = 0;
  for (int64_t V : {50, 1000}) {
    const auto rows = fixed_rows(V);
    selector sel(be, V);
    struct picked {
      int32_t arg = -1;
      std::vector<float> cv;
      std::vector<token_id> ci;
    };
    std::map<std::pair<size_t, int>, picked> device;  // (row, k) -> the device's selections
    for (size_t r = 0; r < rows.size(); ++r)
      for (int k : {1, 32, 80, 256}) {
        auto& d = device[{r, k}];
        sel.run(rows[r], k, d.arg, d.cv, d.ci);
      }
    for (float temp : {0.f, 0.3f, 1.f, 2.5f})
      for (int top_k : {0, 1, 5, 40, 255})
        for (float top_p : {1.f, 0.9f, 0.5f})
          for (float min_p : {0.f, 0.05f, 0.3f}) {
            sampling_params p;
            p.temperature = temp;
            p.top_k = top_k;
            p.top_p = top_p;
            p.min_p = min_p;
            const int k = candidates_for(p);
            if (temp > 0.f && k == 0) continue;  // a draw over the whole row: no device path
            for (uint64_t seed : {1u, 77u}) {
              sampler whole(p, {}, {}, seed), dev(p, {}, {}, seed);
              for (size_t step = 0; step < rows.size(); ++step) {
                INFO("V " << V << " T " << temp << " top_k " << top_k << " top_p " << top_p << " min_p " << min_p
                          << " seed " << seed << " step " << step);
                const auto& row = rows[step % rows.size()];
                std::vector<float> a = row;
                const token_id want = whole.sample(a, static_cast<int>(step));
                REQUIRE(dev.plain(static_cast<int>(step)));
                const auto& d = device.at({step % rows.size(), std::max(k, 1)});
                token_id got;
                if (dev.greedy()) {
                  got = d.arg;
                } else if (auto c = dev.sample_candidates(d.cv, d.ci, static_cast<size_t>(V))) {
                  got = *c;
                  ++via_candidates;
                } else {
                  std::vector<float> b = row;
                  got = dev.sample(b, static_cast<int>(step));
                  ++fallbacks;
                }
                CHECK(got == want);
                whole.accept(want);
                dev.accept(got);
                ++steps;
              }
            }
          }
  }
  INFO("steps " << steps << " via candidates " << via_candidates << " fallbacks " << fallbacks);
  CHECK(via_candidates > steps / 3);  // the candidate path is the common one, not a fallback
}

}  // namespace

TEST_CASE("device argmax and top-k candidates sample exactly what the CPU sampler samples (ref backend)") {
  auto be = gpu::make_ref_backend();
  check_backend(*be);
}

TEST_CASE("device argmax and top-k candidates sample exactly what the CPU sampler samples (Vulkan)") {
  gpu::vk_options o;
  if (const char* t = std::getenv("VKS_VK_TUNING")) o.tuning = t;
  auto be = gpu::make_vk_backend(o);
  if (!be) {
    WARN("no Vulkan device: " << be.error().message);
    return;
  }
  check_backend(**be);
}

TEST_CASE("plain() is false when the pipeline edits the logits; the engine then reads the whole row") {
  sampling_params p;
  p.temperature = 0.f;
  CHECK(sampler(p, {}, {}, 1).plain(0));
  auto with = [&](auto edit) {
    sampling_params q = p;
    edit(q);
    return sampler(q, std::vector<token_id>{1, 2}, std::vector<token_id>{0}, 1);
  };
  CHECK_FALSE(with([](sampling_params& q) { q.logit_bias = {{3, 1.f}}; }).plain(0));
  CHECK_FALSE(with([](sampling_params& q) { q.allowed_token_ids = {3}; }).plain(0));
  CHECK_FALSE(with([](sampling_params& q) { q.repetition_penalty = 1.2f; }).plain(0));
  auto m = with([](sampling_params& q) { q.min_tokens = 2; });
  CHECK_FALSE(m.plain(1));
  CHECK(m.plain(2));
  auto f = with([](sampling_params& q) { q.frequency_penalty = 0.5f; });
  CHECK(f.plain(0));  // nothing generated yet: nothing to penalize
  f.accept(4);
  CHECK_FALSE(f.plain(1));
}
