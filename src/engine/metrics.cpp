// Histogram bookkeeping and Prometheus rendering.
#include "engine/metrics.hpp"

#include <cstdio>

namespace vks::engine {

void histogram::observe(double seconds) noexcept {
  size_t i = 0;
  while (i < bounds.size() && seconds > bounds[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  double cur = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(cur, cur + seconds, std::memory_order_relaxed)) {
  }
}

void histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  char buf[128];
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  std::uint64_t cum = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cum += counts_[i].load(std::memory_order_relaxed);
    std::snprintf(buf, sizeof buf, "%s_bucket{le=\"%g\"} %llu\n", name.c_str(), bounds[i],
                  static_cast<unsigned long long>(cum));
    out += buf;
  }
  cum += counts_[bounds.size()].load(std::memory_order_relaxed);
  std::snprintf(buf, sizeof buf, "%s_bucket{le=\"+Inf\"} %llu\n", name.c_str(), static_cast<unsigned long long>(cum));
  out += buf;
  std::snprintf(buf, sizeof buf, "%s_sum %.6f\n%s_count %llu\n", name.c_str(), sum_.load(std::memory_order_relaxed),
                name.c_str(), static_cast<unsigned long long>(count_.load(std::memory_order_relaxed)));
  out += buf;
}

}  // namespace vks::engine
