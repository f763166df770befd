// Test helpers for tests/gpu: random data, uploads to one or two backends, downloads,
// and the error metric used for kernel-vs-reference comparisons.
#pragma once

#include "catch.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/backend.hpp"
#include "gpu/quant.hpp"

namespace vks::gpu::test {

inline std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Row-wise encoding of f32 data (ne0 elements per row) into dtype t.
inline std::vector<std::byte> encode(dtype t, const std::vector<float>& v, int64_t ne0) {
  const int64_t rows = static_cast<int64_t>(v.size()) / ne0;
  std::vector<std::byte> out(row_bytes(t, static_cast<uint64_t>(ne0)) * static_cast<uint64_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(t, v.data() + r * ne0, out.data() + r * row_bytes(t, static_cast<uint64_t>(ne0)), ne0);
  return out;
}

template <class T>
std::span<const std::byte> as_bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

inline tensor make(backend& b, dtype t, std::array<int64_t, 4> ne, std::span<const std::byte> data) {
  auto r = b.alloc(t, ne, "test");
  REQUIRE(r.ok());
  if (!data.empty()) REQUIRE(b.upload(*r, data).ok());
  return *r;
}

inline std::vector<float> read_f32(backend& b, const tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  REQUIRE(b.download(t, std::as_writable_bytes(std::span<float>(v))).ok());
  return v;
}

inline std::vector<int32_t> read_i32(backend& b, const tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.n_elements()));
  REQUIRE(b.download(t, std::as_writable_bytes(std::span<int32_t>(v))).ok());
  return v;
}

// max_i |a_i - b_i| / (max_i |b_i| + floor): error relative to the output's scale.
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b, double floor = 1e-6) {
  REQUIRE(a.size() == b.size());
  double mx = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    mx = std::max(mx, std::fabs(static_cast<double>(a[i]) - b[i]));
    ref = std::max(ref, std::fabs(static_cast<double>(b[i])));
  }
  return mx / (ref + floor);
}

}  // namespace vks::gpu::test
