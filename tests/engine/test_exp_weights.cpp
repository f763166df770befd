// exp_weights: the sampler's vectorized exp against std::exp in double, the NaN/-inf/underflow
// and min_w rules, rows whose length is not a multiple of the vector width, and the sum.
#include "catch.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "engine/exp_weights.hpp"

using namespace vks::engine;

TEST_CASE("exp_nonpositive is within 1e-6 relative of exp on [-87, 0]") {
  double worst = 0;
  for (int i = 0; i <= 870000; ++i) {
    const float x = -static_cast<float>(i) * 1e-4f;
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(exp_nonpositive(x) - want) / want);
  }
  CHECK(worst < 1e-6);
  CHECK(exp_nonpositive(0.f) == 1.f);
  CHECK(exp_nonpositive(-88.f) == 0.f);
  CHECK(exp_nonpositive(-std::numeric_limits<float>::infinity()) == 0.f);
  CHECK(exp_nonpositive(std::numeric_limits<float>::quiet_NaN()) == 0.f);
}

TEST_CASE("exp_weights matches exp((l - max) / T) per entry and returns their sum") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (std::size_t n : {1u, 3u, 4u, 7u, 4096u, 4101u, 49152u}) {
    std::vector<float> l(n);
    for (std::size_t i = 0; i < n; ++i) l[i] = static_cast<float>(std::sin(static_cast<double>(i) * 0.37) * 12.0);
    if (n > 5) l[2] = nan, l[5] = -inf;
    float l_max = -inf;
    for (float v : l)
      if (!std::isnan(v)) l_max = std::max(l_max, v);
    for (float temp : {0.7f, 1.0f, 0.05f}) {
      const float min_w = temp == 1.0f ? 0.01f : 0.f;
      std::vector<float> w(n, -1.f);
      const double total = exp_weights(l, l_max, 1.f / temp, min_w, w);
      double sum = 0;
      for (std::size_t i = 0; i < n; ++i) {
        // The argument is formed in float: its rounding (~1.2e-7 of |x| twice) adds to the
        // polynomial's error.
        const double x = (static_cast<double>(l[i]) - l_max) / temp;
        double want = std::isnan(l[i]) || x < -87.0 ? 0.0 : std::exp(x);  // below exp(-87): 0
        if (want < min_w) want = 0;
        INFO("n " << n << " T " << temp << " i " << i << " l " << l[i]);
        if (std::abs(x + 87.0) < 1e-3) {
          sum += w[i];  // on the cut: either
          continue;
        }
        if (want == 0)
          CHECK((w[i] == 0.f || w[i] < 2e-38f));
        else
          CHECK(std::abs(w[i] - want) <= (2e-6 + 2.5e-7 * std::abs(x)) * want);
        sum += w[i];
      }
      CHECK(total == Approx(sum).epsilon(1e-6));
    }
  }
}

TEST_CASE("exp_weights may write over its input") {
  std::vector<float> l = {0.f, -1.f, -2.f, -3.f, -4.f};
  const double total = exp_weights(l, 0.f, 1.f, 0.f, l);
  CHECK(l[0] == 1.f);
  CHECK(l[4] == Approx(std::exp(-4.0)).epsilon(1e-6));
  CHECK(total == Approx(1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0) + std::exp(-4.0)).epsilon(1e-6));
}
