// Pooling of hidden rows and the vector post-steps (normalise, truncate).
#include "engine/pooling.hpp"

#include <cmath>

#include "base/assert.hpp"

namespace vks::engine {

const char* to_string(pooling p) noexcept {
  switch (p) {
    case pooling::none: return "none";
    case pooling::mean: return "mean";
    case pooling::cls: return "cls";
    case pooling::last: return "last";
  }
  return "?";
}

std::optional<pooling> pooling_from_gguf(std::int64_t v) {
  switch (v) {
    case 0: return pooling::none;
    case 1: return pooling::mean;
    case 2: return pooling::cls;
    case 3: return pooling::last;
    default: return std::nullopt;
  }
}

bool pooler::wants(int pos, int n_prompt) const {
  switch (kind_) {
    case pooling::mean: return pos < n_prompt;
    case pooling::cls: return pos == 0;
    case pooling::last: return pos == n_prompt - 1;
    case pooling::none: return false;
  }
  return false;
}

void pooler::add(int pos, std::span<const float> row) {
  (void)pos;
  VKS_ASSERT(row.size() == static_cast<std::size_t>(width_), "pooled row has the wrong width");
  if (acc_.empty()) acc_.assign(static_cast<std::size_t>(width_), 0.0);
  if (kind_ == pooling::mean) {
    for (std::size_t i = 0; i < row.size(); ++i) acc_[i] += row[i];
  } else {
    for (std::size_t i = 0; i < row.size(); ++i) acc_[i] = row[i];
  }
  ++n_;
}

std::vector<float> pooler::result() const {
  std::vector<float> out(static_cast<std::size_t>(width_), 0.0f);
  if (n_ == 0) return out;
  const double div = kind_ == pooling::mean ? static_cast<double>(n_) : 1.0;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(acc_[i] / div);
  return out;
}

void l2_normalize(std::vector<float>& v) {
  double ss = 0;
  for (float x : v) ss += static_cast<double>(x) * x;
  if (ss <= 0) return;
  const double inv = 1.0 / std::sqrt(ss);
  for (float& x : v) x = static_cast<float>(x * inv);
}

void truncate_renormalize(std::vector<float>& v, std::size_t dims) {
  if (dims < v.size()) v.resize(dims);
  l2_normalize(v);
}

}  // namespace vks::engine
