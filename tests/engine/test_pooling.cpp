// Pooling math of embedding requests: mean / cls / last over hidden rows, L2
// normalisation, Matryoshka truncation with renormalisation, GGUF pooling numbers.
#include "catch.hpp"

#include <cmath>
#include <vector>

#include "engine/pooling.hpp"

using namespace vks::engine;

namespace {

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double{x} * x;
  return std::sqrt(s);
}

// Rows r of width 3: {r, 2r, -r}.
void feed(pooler& p, int n_prompt) {
  for (int pos = 0; pos < n_prompt; ++pos)
    if (p.wants(pos, n_prompt)) {
      const float r = static_cast<float>(pos + 1);
      std::vector<float> row = {r, 2 * r, -r};
      p.add(pos, row);
    }
}

}  // namespace

TEST_CASE("pooling: mean averages every row, cls takes the first, last the last", "[engine][pooling]") {
  pooler mean(pooling::mean, 3), cls(pooling::cls, 3), last(pooling::last, 3);
  feed(mean, 4);
  feed(cls, 4);
  feed(last, 4);
  CHECK(mean.rows_added() == 4);
  CHECK(cls.rows_added() == 1);
  CHECK(last.rows_added() == 1);
  CHECK(mean.result() == std::vector<float>{2.5f, 5.0f, -2.5f});
  CHECK(cls.result() == std::vector<float>{1.0f, 2.0f, -1.0f});
  CHECK(last.result() == std::vector<float>{4.0f, 8.0f, -4.0f});
  CHECK_FALSE(last.wants(2, 4));
  CHECK(last.wants(0, 1));
  CHECK_FALSE(cls.wants(1, 4));
  CHECK_FALSE(mean.wants(4, 4));
  mean.reset();  // a preempted prompt is recomputed: rows counted once
  feed(mean, 4);
  CHECK(mean.result() == std::vector<float>{2.5f, 5.0f, -2.5f});
}

TEST_CASE("pooling: L2 normalisation gives unit norm and keeps a zero vector", "[engine][pooling]") {
  std::vector<float> v = {3, 4};
  l2_normalize(v);
  CHECK(v[0] == Approx(0.6f));
  CHECK(v[1] == Approx(0.8f));
  std::vector<float> z = {0, 0, 0};
  l2_normalize(z);
  CHECK(z == std::vector<float>{0, 0, 0});
}

TEST_CASE("pooling: Matryoshka truncation keeps the first components and renormalises", "[engine][pooling]") {
  std::vector<float> v = {3, 4, 12};  // |v| = 13
  truncate_renormalize(v, 2);
  REQUIRE(v.size() == 2);
  CHECK(v[0] == Approx(0.6f));
  CHECK(v[1] == Approx(0.8f));
  CHECK(norm(v) == Approx(1.0));
  std::vector<float> w = {1, 1, 1, 1};
  truncate_renormalize(w, 4);  // full width: only normalised
  CHECK(w[3] == Approx(0.5f));
}

TEST_CASE("pooling: GGUF pooling_type numbers", "[engine][pooling]") {
  CHECK(pooling_from_gguf(0) == pooling::none);
  CHECK(pooling_from_gguf(1) == pooling::mean);
  CHECK(pooling_from_gguf(2) == pooling::cls);
  CHECK(pooling_from_gguf(3) == pooling::last);
  CHECK_FALSE(pooling_from_gguf(4).has_value());  // rank: a reranker's
  CHECK_FALSE(pooling_from_gguf(-1).has_value());
}
