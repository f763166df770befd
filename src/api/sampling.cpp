// Shared sampling fields (sampling.hpp).
#include "api/sampling.hpp"

#include <cstdint>
#include <limits>

namespace vks::api {

namespace {

void read_logit_bias(fields& f, engine::sampling_params& p, const parse_limits& lim) {
  const json* v = f.get("logit_bias");
  if (!v || !f.ok()) return;
  if (!v->is_object()) return f.fail("logit_bias", "logit_bias must be an object mapping token ids to biases.");
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    std::int64_t id = 0;
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    if (digits) id = std::stoll(key);
    if (!digits || id > std::numeric_limits<std::int32_t>::max() || (lim.n_vocab > 0 && id >= lim.n_vocab))
      return f.fail("logit_bias", "logit_bias key `" + key + "` is not a valid token id.");
    if (!it->is_number() || it->get<double>() < -100.0 || it->get<double>() > 100.0)
      return f.fail("logit_bias", "logit_bias values must be numbers in [-100, 100].");
    p.logit_bias.emplace_back(static_cast<engine::token_id>(id), it->get<float>());
  }
}

void read_bad_words(fields& f, engine::sampling_params& p) {
  constexpr std::size_t k_max_bad_words = 1024;
  f.string_list("bad_words", p.bad_words, k_max_bad_words);
  for (const auto& w : p.bad_words)
    if (w.find_first_not_of(" \t\r\n") == std::string::npos)
      return f.fail("bad_words", "bad_words must not contain strings that are only whitespace.");
}

}  // namespace

void read_sampling(fields& f, engine::sampling_params& p, const parse_limits& lim) {
  f.number("temperature", p.temperature, {0.0, 2.0});
  f.number("top_p", p.top_p, {0.0, 1.0, true, false});
  std::optional<std::int64_t> top_k;
  f.integer("top_k", top_k, -1, std::numeric_limits<std::int32_t>::max());
  if (top_k) p.top_k = *top_k <= 0 ? 0 : static_cast<int>(*top_k);
  f.number("min_p", p.min_p, {0.0, 1.0});
  f.integer("n", p.n, 1, lim.max_n);
  std::optional<std::int64_t> seed;
  f.integer("seed", seed, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
  if (seed) p.seed = static_cast<std::uint64_t>(*seed);
  f.integer("min_tokens", p.min_tokens, 0, std::numeric_limits<std::int32_t>::max());
  f.string_list("stop", p.stop, lim.max_stop);
  std::int64_t max_id = lim.n_vocab > 0 ? lim.n_vocab - 1 : std::numeric_limits<std::int32_t>::max();
  f.int_list("stop_token_ids", p.stop_token_ids, 0, max_id);
  f.boolean("include_stop_str_in_output", p.include_stop_str_in_output);
  f.boolean("ignore_eos", p.ignore_eos);
  f.number("presence_penalty", p.presence_penalty, {-2.0, 2.0});
  f.number("frequency_penalty", p.frequency_penalty, {-2.0, 2.0});
  f.number("repetition_penalty", p.repetition_penalty, {0.0, 1e9, true, false});
  read_logit_bias(f, p, lim);
  f.int_list("allowed_token_ids", p.allowed_token_ids, 0, max_id);
  if (f.ok() && f.has("allowed_token_ids") && p.allowed_token_ids.empty())
    f.fail("allowed_token_ids", "allowed_token_ids must not be empty.");
  read_bad_words(f, p);
  std::optional<std::int64_t> plp;
  f.integer("prompt_logprobs", plp, -1, lim.max_logprobs);
  if (plp) p.prompt_logprobs = *plp < 0 ? lim.max_logprobs : static_cast<int>(*plp);
  f.boolean("skip_special_tokens", p.skip_special_tokens);
  f.boolean("spaces_between_special_tokens", p.spaces_between_special_tokens);
}

void check_sampling(fields& f, const engine::sampling_params& p) {
  if (p.n > 1 && p.temperature < 1e-5f)
    f.fail("n", "n must be 1 when using greedy sampling (temperature 0), got " + std::to_string(p.n) + ".");
  if (p.max_tokens >= 0 && p.min_tokens > p.max_tokens)
    f.fail("min_tokens", "min_tokens must be less than or equal to max_tokens=" + std::to_string(p.max_tokens) +
                             ", got " + std::to_string(p.min_tokens) + ".");
}

void read_cache_salt(fields& f, std::string& out) {
  if (!f.ok() || !f.has("cache_salt")) return;
  const json* v = f.get("cache_salt");
  if (!v->is_string() || v->get_ref<const std::string&>().empty())
    return f.fail("cache_salt", "Parameter 'cache_salt' must be a non-empty string if provided.");
  if (v->get_ref<const std::string&>().size() > k_max_cache_salt)
    return f.fail("cache_salt", "cache_salt must be at most " + std::to_string(k_max_cache_salt) + " bytes.");
  out = v->get<std::string>();
}

void check_sequence_count(fields& f, std::size_t n_prompts, int n, const parse_limits& lim, std::string_view key) {
  if (!f.ok()) return;
  const auto total = static_cast<std::uint64_t>(n_prompts) * static_cast<std::uint64_t>(n < 1 ? 1 : n);
  if (total <= static_cast<std::uint64_t>(lim.max_seqs_per_request)) return;
  f.fail(key, "This request asks for " + std::to_string(total) + " sequences (" + std::to_string(n_prompts) +
                  " prompt(s) x n=" + std::to_string(n) + "); the limit is " + std::to_string(lim.max_seqs_per_request) +
                  " per request (--max-sequences-per-request).");
}

void read_truncate_prompt_tokens(fields& f, std::string_view key, int& keep, const parse_limits& lim) {
  std::optional<std::int64_t> v;
  const std::int64_t hi = lim.max_model_len > 0 ? lim.max_model_len : std::numeric_limits<std::int32_t>::max();
  f.integer(key, v, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
  if (!v || !f.ok()) return;
  if (*v == 0 || *v < -1)
    return f.fail(key, f.name(key) + " must be -1 (the model's context length) or a positive number of tokens, got " +
                           std::to_string(*v) + ".");
  if (*v > hi)
    return f.fail(key, f.name(key) + " value (" + std::to_string(*v) + ") is greater than max_model_len (" +
                           std::to_string(hi) + "). Please, select a smaller truncation size.");
  keep = static_cast<int>(*v < 0 ? hi : *v);
}

}  // namespace vks::api
