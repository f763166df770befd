// Shared helpers of the model tests: temporary directories, tiny generated models, and
// running whole sequences through a runner.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "model/runner.hpp"
#include "testing/test_model.hpp"

namespace vks::model::testing {

// A fresh directory under $TMPDIR, removed when the object dies.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vks-model-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline std::string shared_dir() {
  const char* s = std::getenv("VKS_SHARED");
  return s ? s : "../shared";
}

inline test_model_spec tiny_spec(const std::string& shape, gpu::dtype type, uint64_t seed = 7) {
  auto s = test_model_shape(shape);
  VKS_ASSERT(s.ok(), "unknown tiny shape");
  s->weight_type = type;
  s->seed = seed;
  return *s;
}

// Feeds `tokens` as one sequence (prefill of `prefill` tokens, then one token per step)
// and returns the logits of every position (T*V floats).
inline std::vector<float> sequence_logits(runner& r, const std::vector<int32_t>& tokens, size_t prefill) {
  kv_sequence seq;
  VKS_ASSERT(r.kv().reserve(seq, static_cast<int>(tokens.size())).ok(), "kv reserve");
  std::vector<float> out;
  size_t pos = 0;
  while (pos < tokens.size()) {
    size_t n = pos == 0 ? std::max<size_t>(prefill, 1) : 1;
    n = std::min(n, tokens.size() - pos);
    batch b;
    b.block_tables.push_back(seq.blocks);
    b.add_tokens(0, std::span(tokens).subspan(pos, n), static_cast<int32_t>(pos), false);
    for (size_t i = 0; i < n; ++i) b.logit_rows.push_back(static_cast<int32_t>(i));
    auto l = r.forward(b);
    VKS_ASSERT(l.ok(), "forward failed");
    out.insert(out.end(), l->begin(), l->end());
    pos += n;
  }
  r.kv().release(seq);
  return out;
}

inline std::vector<int32_t> test_tokens(int n, int vocab, uint32_t seed = 1) {
  std::vector<int32_t> t;
  uint32_t s = seed;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    t.push_back(static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(vocab)));
  }
  return t;
}

}  // namespace vks::model::testing

namespace vks::model::testing {

// Loads `path` on `be` with room for `n_seqs` sequences of `ctx` tokens.
inline std::unique_ptr<runner> load_runner(const std::string& path, gpu::backend& be, int ctx = 128, int n_seqs = 4,
                                           int max_batch = 256, int max_rows = 64,
                                           gpu::dtype kv_type = gpu::dtype::f32) {
  auto f = model_file::open(path);
  VKS_ASSERT(f.ok(), "model_file::open failed");
  runner_options o;
  o.max_context = ctx;
  o.kv_blocks = n_seqs * ((ctx + 15) / 16);
  o.max_batch_tokens = max_batch;
  o.max_logit_rows = max_rows;
  o.kv_type = kv_type;
  auto r = runner::load(*f, be, o);
  if (!r) std::fprintf(stderr, "runner::load: %s\n", r.error().message.c_str());
  VKS_ASSERT(r.ok(), "runner::load failed");
  return std::move(*r);
}

struct diff_stats {
  float max_abs_diff = 0, max_abs_ref = 0;
};
inline diff_stats compare(const std::vector<float>& a, const std::vector<float>& ref) {
  diff_stats d;
  for (size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    d.max_abs_diff = std::max(d.max_abs_diff, std::abs(a[i] - ref[i]));
    d.max_abs_ref = std::max(d.max_abs_ref, std::abs(ref[i]));
  }
  return d;
}

// Positions whose argmax differs although ref's top-2 gap exceeds `margin`.
inline int greedy_disagreements(const std::vector<float>& a, const std::vector<float>& ref, int vocab, float margin) {
  int bad = 0;
  for (size_t p = 0; p + static_cast<size_t>(vocab) <= ref.size(); p += static_cast<size_t>(vocab)) {
    std::span<const float> ra(ref.data() + p, static_cast<size_t>(vocab)), aa(a.data() + p, static_cast<size_t>(vocab));
    int32_t ir = argmax(ra), ia = argmax(aa);
    if (ir == ia) continue;
    if (ra[static_cast<size_t>(ir)] - ra[static_cast<size_t>(ia)] > margin) ++bad;
  }
  return bad;
}

}  // namespace vks::model::testing
