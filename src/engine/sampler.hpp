// CPU sampling of one sequence's next token from a float logits row [V].
// Pipeline (vLLM v1 order): allowed_token_ids (every other token masked) -> bad_words
// (bad_words.hpp) -> logit_bias -> min_tokens mask (EOS + stop_token_ids; skipped
// when it would leave no token, e.g. a structured-output mask that allows only EOS) ->
// repetition penalty (prompt + output) -> frequency/presence penalties (output) ->
// temperature (0 = greedy argmax, lowest id wins ties) -> min_p -> top_k -> top_p ->
// draw. Logprobs are the log-softmax of the RAW logits (before every step above; a
// structured-output mask is applied by the engine before sample(), as in vLLM).
// Randomness: xoshiro256** seeded through splitmix64 from the request seed (sibling i of
// an n > 1 request uses seed + i); one uniform double u = (next() >> 11) * 2^-53 per
// draw, walking candidates in descending probability order (ties: lower id first) when
// top_k or top_p cut the set, else in id order (the same distribution without sorting the
// vocabulary every step), so a seed and the same params reproduce the same tokens on every
// platform. The engine may sample from the device's top-k candidates instead of the whole
// row (sample_candidates) where that provably draws the same token.
// Not thread-safe: one sampler per sequence, used by the engine thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/request.hpp"

namespace vks::engine {

// xoshiro256** (Blackman & Vigna), state from splitmix64(seed).
class rng {
 public:
  explicit rng(std::uint64_t seed) noexcept;
  std::uint64_t next() noexcept;
  double uniform() noexcept;  // [0, 1), 53 random bits

 private:
  std::uint64_t s_[4];
};

// A token kept for drawing, with its unnormalised probability exp((l - l_max) / T).
struct candidate {
  token_id id = 0;
  double p = 0.0;
};

// Pieces of the pipeline, exposed for tests and for the engine's batched paths.
// Every token not in `allowed` becomes -inf (ids outside the vocab are ignored); an empty
// list allows everything.
void apply_allowed_token_ids(std::span<float> logits, std::span<const token_id> allowed);
void apply_logit_bias(std::span<float> logits, std::span<const std::pair<token_id, float>> bias) noexcept;
// vLLM repetition penalty: for every id in `seen`, logit > 0 ? logit / r : logit * r.
void apply_repetition_penalty(std::span<float> logits, std::span<const token_id> seen, float r) noexcept;
// OpenAI penalties: logit -= count * frequency + (count > 0) * presence.
void apply_frequency_presence(std::span<float> logits, const std::unordered_map<token_id, int>& counts,
                              float frequency, float presence) noexcept;
// Candidates after temperature, min_p, top_k and top_p, sorted by descending p (ties:
// lower id first). temperature must be > 0. Never empty unless every logit is -inf/NaN.
std::vector<candidate> support_set(std::span<const float> logits, float temperature, float min_p,
                                   int top_k, float top_p);
// support_set's cut after min_p: c holds the surviving tokens in id order; top_k, then top_p
// (the shortest prefix in descending order whose mass reaches top_p).
void cut_support(std::vector<candidate>& c, int top_k, float top_p);
// Index of the largest logit (lowest id on ties; NaN counts as -inf).
token_id argmax(std::span<const float> logits) noexcept;
// Log-probabilities of `chosen` and of the k most likely tokens of the raw logits.
// token_logprob::text is left empty (the engine fills it from the tokenizer).
position_logprobs compute_logprobs(std::span<const float> logits, token_id chosen, int k);

// The per-sequence sampler: holds the RNG and the token counts penalties need.
class sampler {
 public:
  // prompt: this sequence's prompt ids (for the repetition penalty). eos_ids: the model's
  // end-of-generation tokens (masked with stop_token_ids until min_tokens).
  sampler(const sampling_params& params, std::span<const token_id> prompt,
          std::span<const token_id> eos_ids, std::uint64_t seed);

  // Picks the next token. logits [V] is scratch: it is modified in place. n_generated:
  // tokens this sequence generated before this one (min_tokens; the count is
  // sequence_output's). When lp is not null and params.logprobs >= 0, *lp receives the
  // raw logprobs of the chosen token.
  token_id sample(std::span<float> logits, int n_generated, position_logprobs* lp = nullptr);

  // Greedy (temperature 0): the choice is argmax of the logits (after the pipeline).
  bool greedy() const noexcept;
  // True when the pipeline before temperature leaves the logits unchanged at this step (no
  // allowed_token_ids, bad_words, logit_bias, min_tokens mask, penalty with something to
  // penalize): then a greedy choice is the device's argmax and sample_candidates applies.
  bool plain(int n_generated) const noexcept;
  // The sample() of a plain step (no logprobs) from the row's k largest logits (values
  // descending, ties by lower id, NaN as -inf; ids >= n_vocab are padding), when that is
  // provably the same token sample() would draw from the whole row (same RNG use); nullopt,
  // consuming nothing, when it is not (then sample() over the whole row).
  std::optional<token_id> sample_candidates(std::span<const float> values, std::span<const token_id> ids,
                                            std::size_t n_vocab);

  // Records a generated token (penalties and bad_words use it). sample() does not call
  // it so that the engine may reject a token (e.g. a structured-output mask) first.
  void accept(token_id t);

 private:
  token_id draw_unsorted(std::span<float> logits);
  token_id draw_support(const std::vector<candidate>& c);  // c non-empty

  sampling_params params_;
  std::vector<token_id> prompt_and_output_;  // distinct ids (sorted) for repetition
  std::unordered_map<token_id, int> output_counts_;
  std::vector<token_id> output_;              // generated ids, kept only for bad_words
  std::vector<token_id> masked_until_min_;    // eos + stop_token_ids
  rng rng_;
};

}  // namespace vks::engine
