// Request fields shared by chat completions, completions and the LMI schema that map onto
// engine::sampling_params, with vLLM's ranges:
//   temperature [0, 2]; top_p (0, 1]; top_k -1 | 0 (off) | >= 1; min_p [0, 1];
//   n [1, max_n]; seed int64; min_tokens >= 0 (<= max_tokens); stop: string or list of
//   non-empty strings (<= max_stop); stop_token_ids ints >= 0; presence/frequency
//   [-2, 2]; repetition_penalty > 0; logit_bias {"<token id>": [-100, 100]};
//   prompt_logprobs -1 (= max_logprobs) or [0, max_logprobs]; allowed_token_ids a
//   non-empty list of ids in the vocabulary; bad_words a string or list of strings, none
//   empty or only whitespace (at most 1024); booleans include_stop_str_in_output,
//   ignore_eos, skip_special_tokens, spaces_between_special_tokens.
// max_tokens and logprobs differ per endpoint and are read by each parser.
#pragma once

#include <cstddef>
#include <string_view>

#include "api/fields.hpp"
#include "engine/request.hpp"

namespace vks::api {

struct parse_limits {
  int max_n = 128;
  int max_logprobs = 20;
  int n_vocab = 0;            // 0: token ids are not range-checked here (the engine does)
  std::size_t max_stop = 64;  // OpenAI documents 4; vLLM accepts more
  int max_model_len = 0;      // 0: unknown (truncate_prompt_tokens is not bounded here)
  int max_seqs_per_request = 256;  // prompts x n of one request (--max-sequences-per-request)
};

// vLLM's cache_salt: a non-empty string (at most k_max_cache_salt bytes) that keeps the
// request's prompt out of everyone else's prefix cache (only requests with the same salt
// share cached blocks). `out` stays "" when absent.
inline constexpr std::size_t k_max_cache_salt = 1024;
void read_cache_salt(fields& f, std::string& out);

// prompts x n above lim.max_seqs_per_request -> 400 naming the limit (on `key`).
void check_sequence_count(fields& f, std::size_t n_prompts, int n, const parse_limits& lim, std::string_view key);

void read_sampling(fields& f, engine::sampling_params& p, const parse_limits& lim);
// Checks that need several fields, after max_tokens is set: n > 1 with greedy sampling
// (vLLM rejects it), min_tokens <= max_tokens.
void check_sampling(fields& f, const engine::sampling_params& p);

// vLLM's truncate_prompt_tokens (the LMI schema's `truncate`): keep only the last k prompt
// tokens. Accepts -1 (the model's context length, max_model_len) or [1, max_model_len]
// (vLLM's bound); 0 or below -1 is a 400. `keep` receives the number of tokens to keep,
// untouched when the key is absent (0 = keep the whole prompt).
void read_truncate_prompt_tokens(fields& f, std::string_view key, int& keep, const parse_limits& lim);

}  // namespace vks::api
