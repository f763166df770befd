// Sampler: RNG reference values, each pipeline step on known logits (allowed_token_ids
// and bad_words included), support sets, logprobs against a hand-computed log-softmax,
// seeded reproducibility.
#include "catch.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "engine/bad_words.hpp"
#include "engine/sampler.hpp"

using namespace vks::engine;

namespace {
std::vector<float> logits_of_probs(std::vector<double> p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}
std::vector<token_id> ids(const std::vector<candidate>& c) {
  std::vector<token_id> out;
  for (const auto& x : c) out.push_back(x.id);
  return out;
}
}  // namespace

TEST_CASE("rng: xoshiro256** seeded by splitmix64 matches the reference values") {
  // Reference: splitmix64 state expansion of seed 0, then xoshiro256** next()
  // (values computed independently from the published algorithms).
  rng r(0);
  CHECK(r.next() == 0x99EC5F36CB75F2B4ull);
  CHECK(r.next() == 0xBF6E1F784956452Aull);
  rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    auto x = a.next();
    CHECK(x == b.next());
    differs |= x != c.next();
  }
  CHECK(differs);
  rng u(7);
  for (int i = 0; i < 1000; ++i) {
    double v = u.uniform();
    REQUIRE(v >= 0.0);
    REQUIRE(v < 1.0);
  }
}

TEST_CASE("logit_bias adds to the named tokens and ignores ids outside the vocab") {
  std::vector<float> l{1.0f, 2.0f, 3.0f};
  std::vector<std::pair<token_id, float>> bias{{0, 5.0f}, {2, -100.0f}, {7, 1.0f}, {-1, 1.0f}};
  apply_logit_bias(l, bias);
  CHECK(l[0] == Approx(6.0f));
  CHECK(l[1] == Approx(2.0f));
  CHECK(l[2] == Approx(-97.0f));
}

TEST_CASE("repetition penalty divides positive and multiplies negative logits (vLLM)") {
  std::vector<float> l{2.0f, -2.0f, 1.0f, 0.0f};
  std::vector<token_id> seen{0, 1, 3};
  apply_repetition_penalty(l, seen, 2.0f);
  CHECK(l[0] == Approx(1.0f));
  CHECK(l[1] == Approx(-4.0f));
  CHECK(l[2] == Approx(1.0f));  // not seen
  CHECK(l[3] == Approx(0.0f));
}

TEST_CASE("frequency and presence penalties follow OpenAI's formula") {
  std::vector<float> l{1.0f, 1.0f, 1.0f};
  std::unordered_map<token_id, int> counts{{0, 3}, {1, 1}};
  apply_frequency_presence(l, counts, 0.5f, 0.25f);
  CHECK(l[0] == Approx(1.0f - 1.5f - 0.25f));
  CHECK(l[1] == Approx(1.0f - 0.5f - 0.25f));
  CHECK(l[2] == Approx(1.0f));
  std::vector<float> neg{1.0f, 1.0f};
  apply_frequency_presence(neg, {{0, 2}}, -1.0f, -1.0f);  // negative values encourage
  CHECK(neg[0] == Approx(4.0f));
}

TEST_CASE("support sets of top_k, top_p and min_p") {
  auto l = logits_of_probs({0.1, 0.5, 0.15, 0.25});  // ids by prob: 1, 3, 2, 0
  CHECK(ids(support_set(l, 1.0f, 0.0f, 0, 1.0f)) == std::vector<token_id>{1, 3, 2, 0});
  CHECK(ids(support_set(l, 1.0f, 0.0f, 2, 1.0f)) == std::vector<token_id>{1, 3});
  CHECK(ids(support_set(l, 1.0f, 0.0f, 10, 1.0f)).size() == 4);
  CHECK(ids(support_set(l, 1.0f, 0.0f, 0, 0.7f)) == std::vector<token_id>{1, 3});
  CHECK(ids(support_set(l, 1.0f, 0.0f, 0, 0.5f)) == std::vector<token_id>{1});
  CHECK(ids(support_set(l, 1.0f, 0.0f, 0, 0.76f)) == std::vector<token_id>{1, 3, 2});
  CHECK(ids(support_set(l, 1.0f, 0.0f, 0, 0.01f)) == std::vector<token_id>{1});
  // min_p is relative to the top probability: 0.3 * 0.5 = 0.15 keeps id 2 (p = 0.15).
  CHECK(ids(support_set(l, 1.0f, 0.29f, 0, 1.0f)) == std::vector<token_id>{1, 3, 2});
  CHECK(ids(support_set(l, 1.0f, 0.31f, 0, 1.0f)) == std::vector<token_id>{1, 3});
  // top_p is applied after top_k renormalises: top 2 = {0.5, 0.25} -> 0.6 of that needs both.
  CHECK(ids(support_set(l, 1.0f, 0.0f, 2, 0.6f)) == std::vector<token_id>{1});
  CHECK(ids(support_set(l, 1.0f, 0.0f, 2, 0.7f)) == std::vector<token_id>{1, 3});
  // Temperature sharpens: at T = 0.5 the probs are squared (0.25, 0.0625, ...).
  auto c = support_set(l, 0.5f, 0.0f, 0, 1.0f);
  REQUIRE(c.size() == 4);
  CHECK(c[1].p / c[0].p == Approx(0.25));
  // Ties break toward the lower id.
  std::vector<float> tie{1.0f, 2.0f, 2.0f};
  CHECK(ids(support_set(tie, 1.0f, 0.0f, 1, 1.0f)) == std::vector<token_id>{1});
  // top_p over a flat vocabulary needs more than the first sorted round (64): half of 1000
  // equal tokens is the 500 lowest ids, in order.
  std::vector<float> flat(1000, 0.5f);
  const auto half = ids(support_set(flat, 1.0f, 0.0f, 0, 0.5f));
  REQUIRE(half.size() == 500);
  for (size_t i = 0; i < half.size(); ++i) CHECK(half[i] == static_cast<token_id>(i));
}

TEST_CASE("logprobs are the log-softmax of the raw logits") {
  std::vector<float> l{1.0f, 2.0f, 3.0f};
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  auto lp = compute_logprobs(l, 0, 2);
  CHECK(lp.token.id == 0);
  CHECK(lp.token.logprob == Approx(1.0 - lse));
  CHECK(lp.token.rank == 3);
  REQUIRE(lp.top.size() == 2);
  CHECK(lp.top[0].id == 2);
  CHECK(lp.top[0].logprob == Approx(3.0 - lse));
  CHECK(lp.top[0].rank == 1);
  CHECK(lp.top[1].id == 1);
  CHECK(lp.top[1].logprob == Approx(2.0 - lse));
  auto all = compute_logprobs(l, 2, 10);
  CHECK(all.top.size() == 3);
  CHECK(all.token.rank == 1);
  std::vector<float> masked{0.0f, -INFINITY};
  CHECK(std::isinf(compute_logprobs(masked, 1, 0).token.logprob));
}

TEST_CASE("greedy sampling takes the argmax after bias and penalties") {
  sampling_params p;
  p.temperature = 0.0f;
  std::vector<token_id> prompt{2};
  sampler s(p, prompt, {}, 1);
  std::vector<float> l{1.0f, 3.0f, 2.0f};
  CHECK(s.sample(l, 0) == 1);
  p.logit_bias = {{0, 10.0f}};
  sampler s2(p, prompt, {}, 1);
  std::vector<float> l2{1.0f, 3.0f, 2.0f};
  position_logprobs lp;
  p.logprobs = 0;
  sampler s3(p, prompt, {}, 1);
  CHECK(s3.sample(l2, 0, &lp) == 0);
  // Logprobs ignore the bias: raw distribution.
  double lse = std::log(std::exp(1.0) + std::exp(3.0) + std::exp(2.0));
  CHECK(lp.token.logprob == Approx(1.0 - lse));
  CHECK(lp.token.rank == 3);
}

TEST_CASE("repetition penalty in the sampler covers prompt and output tokens") {
  sampling_params p;
  p.temperature = 0.0f;
  p.repetition_penalty = 4.0f;
  std::vector<token_id> prompt{0};
  sampler s(p, prompt, {}, 1);
  std::vector<float> l{4.0f, 2.0f, 1.5f};  // id 0 penalised to 1.0
  CHECK(s.sample(l, 0) == 1);
  s.accept(1);
  std::vector<float> l2{4.0f, 2.0f, 1.5f};  // 0 -> 1, 1 -> 0.5
  CHECK(s.sample(l2, 0) == 2);
}

TEST_CASE("frequency penalty counts output tokens only") {
  sampling_params p;
  p.temperature = 0.0f;
  p.frequency_penalty = 1.0f;
  std::vector<token_id> prompt{0, 0, 0};
  sampler s(p, prompt, {}, 1);
  std::vector<float> l{2.0f, 1.5f};
  CHECK(s.sample(l, 0) == 0);  // prompt repeats do not count
  s.accept(0);
  std::vector<float> l2{2.0f, 1.5f};
  CHECK(s.sample(l2, 0) == 1);  // 2 - 1 = 1 < 1.5
}

TEST_CASE("min_tokens masks EOS and stop_token_ids until reached; ignore_eos leaves EOS") {
  sampling_params p;
  p.temperature = 0.0f;
  p.min_tokens = 2;
  p.stop_token_ids = {1};
  std::vector<token_id> eos{0};
  sampler s(p, {}, eos, 1);
  std::vector<float> l{5.0f, 4.0f, 1.0f};
  CHECK(s.sample(l, 0) == 2);
  s.accept(2);
  std::vector<float> l2{5.0f, 4.0f, 1.0f};
  CHECK(s.sample(l2, 1) == 2);
  s.accept(2);
  std::vector<float> l3{5.0f, 4.0f, 1.0f};
  CHECK(s.sample(l3, 2) == 0);
  p.ignore_eos = true;
  sampler s2(p, {}, eos, 1);
  std::vector<float> l4{5.0f, 4.0f, 1.0f};
  CHECK(s2.sample(l4, 0) == 0);  // EOS not masked, only the stop id is
}

TEST_CASE("min_tokens gives way when only the masked tokens remain (a grammar that is complete)") {
  sampling_params p;
  p.temperature = 1.0f;
  p.min_tokens = 5;
  std::vector<token_id> eos{0};
  sampler s(p, {}, eos, 1);
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> only_eos{2.0f, ninf, ninf};  // the engine masked everything but EOS
  CHECK(s.sample(only_eos, 0) == 0);
  std::vector<float> more{2.0f, ninf, 1.0f};        // another token is allowed: EOS stays masked
  CHECK(s.sample(more, 0) == 2);
}

TEST_CASE("allowed_token_ids masks every other token, EOS included, before bias and penalties") {
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> l{5.0f, 1.0f, 3.0f, 2.0f};
  std::vector<token_id> allowed{3, 1, 9, -2};  // ids outside the vocab are ignored
  apply_allowed_token_ids(l, allowed);
  CHECK(l == std::vector<float>{ninf, 1.0f, ninf, 2.0f});
  std::vector<float> all{5.0f, 1.0f};
  apply_allowed_token_ids(all, {});
  CHECK(all == std::vector<float>{5.0f, 1.0f});  // empty: no restriction

  sampling_params p;
  p.temperature = 0.0f;
  p.allowed_token_ids = {1, 2};
  p.logit_bias = {{0, 50.0f}};  // a bias cannot bring a masked token back
  std::vector<token_id> eos{0};
  sampler greedy(p, {}, eos, 1);
  std::vector<float> g{9.0f, 1.0f, 2.0f, 8.0f};
  CHECK(greedy.sample(g, 0) == 2);

  p.temperature = 1.5f;
  sampler random(p, {}, eos, 7);
  int seen[4] = {0, 0, 0, 0};
  for (int i = 0; i < 400; ++i) {
    std::vector<float> x{9.0f, 1.0f, 1.2f, 8.0f};
    ++seen[random.sample(x, 0)];
  }
  CHECK(seen[0] == 0);
  CHECK(seen[3] == 0);
  CHECK(seen[1] > 50);
  CHECK(seen[2] > 50);
}

TEST_CASE("bad_words: a word's last token is banned when its other tokens were just generated (vLLM)") {
  const float ninf = -std::numeric_limits<float>::infinity();
  const std::vector<std::vector<token_id>> words{{4}, {1, 2}, {3, 1, 2}, {7, 7}};
  auto after = [&](std::vector<token_id> generated) {
    std::vector<float> l(8, 0.0f);
    apply_bad_words(l, words, generated);
    std::vector<token_id> banned;
    for (std::size_t i = 0; i < l.size(); ++i)
      if (l[i] == ninf) banned.push_back(static_cast<token_id>(i));
    return banned;
  };
  CHECK(after({}) == std::vector<token_id>{4});              // one-token words always
  CHECK(after({1}) == std::vector<token_id>{2, 4});           // "1 2" would complete
  CHECK(after({3, 1}) == std::vector<token_id>{2, 4});        // both "1 2" and "3 1 2"
  CHECK(after({1, 5}) == std::vector<token_id>{4});
  CHECK(after({7}) == std::vector<token_id>{4, 7});
  CHECK(after({6, 7}) == std::vector<token_id>{4, 7});

  // In the sampler: the prefix is matched against this sequence's own output.
  sampling_params p;
  p.temperature = 0.0f;
  p.bad_words_ids = {{1, 2}};
  sampler s(p, std::vector<token_id>{1}, {}, 1);  // a prompt ending in 1 does not count
  std::vector<float> l{0.0f, 1.0f, 3.0f, 2.0f};
  CHECK(s.sample(l, 0) == 2);
  s.accept(1);
  std::vector<float> l2{0.0f, 1.0f, 3.0f, 2.0f};
  CHECK(s.sample(l2, 0) == 3);  // 2 would complete the bad word
  s.accept(3);
  std::vector<float> l3{0.0f, 1.0f, 3.0f, 2.0f};
  CHECK(s.sample(l3, 0) == 2);
}

TEST_CASE("seeded sampling is reproducible and follows the distribution") {
  sampling_params p;
  p.temperature = 1.0f;
  auto base = logits_of_probs({0.5, 0.25, 0.125, 0.125});
  auto run = [&](std::uint64_t seed, int n) {
    sampler s(p, {}, {}, seed);
    std::vector<token_id> out;
    for (int i = 0; i < n; ++i) {
      auto l = base;
      out.push_back(s.sample(l, 0));
    }
    return out;
  };
  CHECK(run(1234, 64) == run(1234, 64));
  CHECK(run(1234, 64) != run(1235, 64));
  auto many = run(99, 20000);
  std::vector<int> hist(4);
  for (auto t : many) ++hist[static_cast<std::size_t>(t)];
  CHECK(hist[0] / 20000.0 == Approx(0.5).margin(0.02));
  CHECK(hist[1] / 20000.0 == Approx(0.25).margin(0.02));
  CHECK(hist[2] / 20000.0 == Approx(0.125).margin(0.02));
  // top_k = 1 at any temperature behaves like greedy.
  p.top_k = 1;
  for (auto t : run(5, 50)) CHECK(t == 0);
}
