// Sampling pipeline of sampler.hpp. Probabilities are computed in double, except the
// unsorted draw's weights (float, from exp_weights, summed in double); logits stay float
// (the model's output type).
#include "engine/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/bad_words.hpp"
#include "engine/exp_weights.hpp"

namespace vks::engine {

namespace {

constexpr float k_greedy_eps = 1e-5f;  // vLLM's _SAMPLING_EPS

std::uint64_t splitmix64(std::uint64_t& x) noexcept {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

bool in_vocab(token_id t, std::size_t n) noexcept { return t >= 0 && static_cast<std::size_t>(t) < n; }

// Descending probability, then ascending id: the one order every step walks.
bool before(const candidate& a, const candidate& b) noexcept {
  return a.p != b.p ? a.p > b.p : a.id < b.id;
}

}  // namespace

rng::rng(std::uint64_t seed) noexcept {
  for (auto& s : s_) s = splitmix64(seed);
}

std::uint64_t rng::next() noexcept {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double rng::uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

void apply_allowed_token_ids(std::span<float> logits, std::span<const token_id> allowed) {
  if (allowed.empty()) return;
  std::vector<std::pair<std::size_t, float>> kept;
  for (token_id id : allowed)
    if (in_vocab(id, logits.size())) kept.emplace_back(static_cast<std::size_t>(id), logits[static_cast<std::size_t>(id)]);
  std::fill(logits.begin(), logits.end(), -std::numeric_limits<float>::infinity());
  for (auto [i, v] : kept) logits[i] = v;
}

void apply_logit_bias(std::span<float> logits, std::span<const std::pair<token_id, float>> bias) noexcept {
  for (const auto& [id, b] : bias)
    if (in_vocab(id, logits.size())) logits[static_cast<std::size_t>(id)] += b;
}

void apply_repetition_penalty(std::span<float> logits, std::span<const token_id> seen, float r) noexcept {
  if (r == 1.0f) return;
  for (token_id id : seen) {
    if (!in_vocab(id, logits.size())) continue;
    float& l = logits[static_cast<std::size_t>(id)];
    l = l > 0.0f ? l / r : l * r;
  }
}

void apply_frequency_presence(std::span<float> logits, const std::unordered_map<token_id, int>& counts,
                              float frequency, float presence) noexcept {
  if (frequency == 0.0f && presence == 0.0f) return;
  for (const auto& [id, n] : counts) {
    if (!in_vocab(id, logits.size()) || n <= 0) continue;
    logits[static_cast<std::size_t>(id)] -= static_cast<float>(n) * frequency + presence;
  }
}

token_id argmax(std::span<const float> logits) noexcept {
  std::size_t best = 0;
  float best_v = -std::numeric_limits<float>::infinity();
  bool found = false;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    float v = logits[i];
    if (std::isnan(v)) continue;
    if (!found || v > best_v) {
      best = i;
      best_v = v;
      found = true;
    }
  }
  return static_cast<token_id>(best);
}

std::vector<candidate> support_set(std::span<const float> logits, float temperature, float min_p,
                                   int top_k, float top_p) {
  std::vector<candidate> c;
  float l_max = -std::numeric_limits<float>::infinity();
  for (float v : logits)
    if (!std::isnan(v) && v > l_max) l_max = v;
  if (!std::isfinite(l_max)) return c;  // every logit -inf/NaN (or +inf: degenerate)
  const double inv_t = 1.0 / static_cast<double>(temperature);
  // exp((l - l_max) / T): the most likely token has p = 1, so min_p compares against 1.
  c.reserve(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    float v = logits[i];
    if (std::isnan(v)) continue;
    double p = std::exp((static_cast<double>(v) - l_max) * inv_t);
    if (p > 0.0 && p >= static_cast<double>(min_p)) c.push_back({static_cast<token_id>(i), p});
  }
  cut_support(c, top_k, top_p);
  return c;
}

// c: every candidate with p > 0 and p >= min_p, in id order (support_set's scan; the top_p
// mass is summed in this order when top_k does not cut).
void cut_support(std::vector<candidate>& c, int top_k, float top_p) {
  const bool cut = top_k > 0 && static_cast<std::size_t>(top_k) < c.size();
  if (cut) {
    std::partial_sort(c.begin(), c.begin() + top_k, c.end(), before);
    c.resize(static_cast<std::size_t>(top_k));
  } else if (top_p >= 1.0f) {
    std::sort(c.begin(), c.end(), before);
  }
  if (top_p < 1.0f) {
    double total = 0.0;
    for (const auto& x : c) total += x.p;
    // Keep the shortest prefix whose mass reaches top_p (at least one token). Only that
    // prefix needs ordering: sort the best `sorted` candidates, growing it until they
    // reach the mass (a peaked distribution stops after the first round). After a top_k
    // cut the candidates are sorted already.
    const double want = static_cast<double>(top_p) * total;
    std::size_t sorted = std::min<std::size_t>(c.size(), 64), keep = 0;
    for (;;) {
      if (!cut) std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(sorted), c.end(), before);
      double cum = 0.0;
      keep = 0;
      while (keep < sorted && (keep == 0 || cum < want)) cum += c[keep++].p;
      if (cum >= want || sorted == c.size()) break;
      sorted = std::min(c.size(), sorted * 4);
    }
    c.resize(keep);
  }
}

position_logprobs compute_logprobs(std::span<const float> logits, token_id chosen, int k) {
  double l_max = -std::numeric_limits<double>::infinity();
  for (float v : logits)
    if (!std::isnan(v) && v > l_max) l_max = v;
  double sum = 0.0;
  if (std::isfinite(l_max))
    for (float v : logits)
      if (!std::isnan(v)) sum += std::exp(static_cast<double>(v) - l_max);
  const double lse = l_max + std::log(sum);
  auto lp_of = [&](std::size_t i) {
    float v = logits[i];
    if (std::isnan(v) || !std::isfinite(lse)) return -std::numeric_limits<float>::infinity();
    return static_cast<float>(static_cast<double>(v) - lse);
  };
  auto logit_of = [&](std::size_t i) {
    float v = logits[i];
    return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v;
  };
  position_logprobs out;
  const std::size_t ci = in_vocab(chosen, logits.size()) ? static_cast<std::size_t>(chosen) : 0;
  int rank = 1;
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (logit_of(i) > logit_of(ci)) ++rank;
  out.token = {chosen, lp_of(ci), rank, {}};
  if (k > 0) {
    std::vector<candidate> all(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i) all[i] = {static_cast<token_id>(i), logit_of(i)};
    std::size_t kk = std::min<std::size_t>(static_cast<std::size_t>(k), all.size());
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(kk), all.end(), before);
    for (std::size_t j = 0; j < kk; ++j) {
      auto i = static_cast<std::size_t>(all[j].id);
      out.top.push_back({all[j].id, lp_of(i), static_cast<int>(j) + 1, {}});
    }
  }
  return out;
}

sampler::sampler(const sampling_params& params, std::span<const token_id> prompt,
                 std::span<const token_id> eos_ids, std::uint64_t seed)
    : params_(params), rng_(seed) {
  if (params_.repetition_penalty != 1.0f) {
    prompt_and_output_.assign(prompt.begin(), prompt.end());
    std::sort(prompt_and_output_.begin(), prompt_and_output_.end());
    prompt_and_output_.erase(std::unique(prompt_and_output_.begin(), prompt_and_output_.end()),
                             prompt_and_output_.end());
  }
  if (params_.min_tokens > 0) {
    masked_until_min_.assign(params_.stop_token_ids.begin(), params_.stop_token_ids.end());
    if (!params_.ignore_eos) masked_until_min_.insert(masked_until_min_.end(), eos_ids.begin(), eos_ids.end());
  }
}

token_id sampler::sample(std::span<float> logits, int n_generated, position_logprobs* lp) {
  VKS_ASSERT(!logits.empty(), "sampling from an empty logits row");
  // Raw logprobs first: every later step edits the logits in place.
  const bool want_lp = lp && params_.logprobs >= 0;
  std::vector<float> raw;
  if (want_lp) raw.assign(logits.begin(), logits.end());

  apply_allowed_token_ids(logits, params_.allowed_token_ids);
  apply_bad_words(logits, params_.bad_words_ids, output_);
  apply_logit_bias(logits, params_.logit_bias);
  if (n_generated < params_.min_tokens && !masked_until_min_.empty()) {
    std::vector<std::pair<std::size_t, float>> saved;
    for (token_id id : masked_until_min_)
      if (in_vocab(id, logits.size())) {
        saved.emplace_back(static_cast<std::size_t>(id), logits[static_cast<std::size_t>(id)]);
        logits[static_cast<std::size_t>(id)] = -std::numeric_limits<float>::infinity();
      }
    const bool any_left = std::any_of(logits.begin(), logits.end(), [](float v) { return v > -std::numeric_limits<float>::infinity(); });
    if (!any_left)
      for (auto [i, v] : saved) logits[i] = v;
  }
  apply_repetition_penalty(logits, prompt_and_output_, params_.repetition_penalty);
  apply_frequency_presence(logits, output_counts_, params_.frequency_penalty, params_.presence_penalty);

  token_id chosen;
  if (params_.temperature < k_greedy_eps) {
    chosen = argmax(logits);
  } else if (params_.top_k <= 0 && params_.top_p >= 1.0f) {
    chosen = draw_unsorted(logits);
  } else {
    auto c = support_set(logits, params_.temperature, params_.min_p, params_.top_k, params_.top_p);
    chosen = c.empty() ? argmax(logits) : draw_support(c);
  }
  if (want_lp) *lp = compute_logprobs(raw, chosen, params_.logprobs);
  return chosen;
}

token_id sampler::draw_support(const std::vector<candidate>& c) {
  double total = 0.0;
  for (const auto& x : c) total += x.p;
  double u = rng_.uniform() * total;
  token_id chosen = c.back().id;  // guards against rounding at the top of the range
  for (const auto& x : c) {
    if (u < x.p) return x.id;
    u -= x.p;
  }
  return chosen;
}

bool sampler::greedy() const noexcept { return params_.temperature < k_greedy_eps; }

bool sampler::plain(int n_generated) const noexcept {
  const bool min_mask = n_generated < params_.min_tokens && !masked_until_min_.empty();
  const bool penalties = (params_.frequency_penalty != 0.0f || params_.presence_penalty != 0.0f) && !output_counts_.empty();
  return params_.allowed_token_ids.empty() && params_.bad_words_ids.empty() && params_.logit_bias.empty() && !min_mask &&
         prompt_and_output_.empty() && !penalties;
}

// support_set over the device's candidates, and the proof that it equals support_set over
// the whole row: every token outside the candidates has a logit <= the last candidate's,
// so p <= p_out; either no such token survives min_p, or top_k cuts strictly inside the
// candidates above p_out. Then the draw, as sample() would make it.
std::optional<token_id> sampler::sample_candidates(std::span<const float> values, std::span<const token_id> ids,
                                                   std::size_t n_vocab) {
  if (values.empty() || values.size() != ids.size() || !std::isfinite(values[0]) || greedy()) return std::nullopt;
  if (params_.top_k <= 0 && params_.top_p >= 1.0f) return std::nullopt;  // sample() draws over the whole row
  const float l_max = values[0];
  const double inv_t = 1.0 / static_cast<double>(params_.temperature);
  auto p_of = [&](float v) { return std::exp((static_cast<double>(v) - l_max) * inv_t); };
  std::vector<std::pair<token_id, float>> by_id;
  for (std::size_t j = 0; j < ids.size(); ++j)
    if (in_vocab(ids[j], n_vocab)) by_id.emplace_back(ids[j], values[j]);
  std::sort(by_id.begin(), by_id.end());
  std::vector<candidate> c;
  for (auto [id, v] : by_id) {
    if (std::isnan(v)) continue;
    const double p = p_of(v);
    if (p > 0.0 && p >= static_cast<double>(params_.min_p)) c.push_back({id, p});
  }
  if (by_id.size() < n_vocab) {  // tokens outside the candidates exist
    const double p_out = p_of(values.back());
    if (!(p_out == 0.0 || p_out < static_cast<double>(params_.min_p))) {
      const int k = params_.top_k;
      if (k <= 0 || c.size() <= static_cast<std::size_t>(k)) return std::nullopt;
      std::vector<candidate> s = c;
      std::nth_element(s.begin(), s.begin() + (k - 1), s.end(), before);
      if (!(s[static_cast<std::size_t>(k - 1)].p > p_out)) return std::nullopt;
    }
  }
  cut_support(c, params_.top_k, params_.top_p);
  if (c.empty()) return std::nullopt;
  return draw_support(c);
}

// The draw without a top_k/top_p cut: the candidates' order does not change the
// distribution, so they are walked in id order instead of sorting the vocabulary.
token_id sampler::draw_unsorted(std::span<float> logits) {
  float l_max = -std::numeric_limits<float>::infinity();
  for (float v : logits)
    if (!std::isnan(v) && v > l_max) l_max = v;
  if (!std::isfinite(l_max)) return argmax(logits);
  std::span<float> p = logits;  // the weights replace the logits in place (scratch)
  const double total = exp_weights(logits, l_max, 1.f / params_.temperature, params_.min_p, p);
  double u = rng_.uniform() * total;
  token_id last = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0.0) continue;
    if (u < p[i]) return static_cast<token_id>(i);
    u -= p[i];
    last = static_cast<token_id>(i);
  }
  return last;  // rounding at the top of the range
}

void sampler::accept(token_id t) {
  ++output_counts_[t];
  if (!params_.bad_words_ids.empty()) output_.push_back(t);
  if (params_.repetition_penalty != 1.0f) {
    auto it = std::lower_bound(prompt_and_output_.begin(), prompt_and_output_.end(), t);
    if (it == prompt_and_output_.end() || *it != t) prompt_and_output_.insert(it, t);
  }
}

}  // namespace vks::engine
