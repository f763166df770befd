// POST /v1/completions request (contracts.md 6.1, checklist 50-53) and the SageMaker LMI /
// TGI schema `{"inputs", "parameters", "stream"}` that /invocations maps onto it (3.6),
// as DJL's vLLM handler does (its other parameters pass through as completions fields):
//   max_new_tokens -> max_tokens (default 30; a `max_tokens` parameter wins),
//   return_full_text -> echo, truncate (or truncate_prompt_tokens) ->
//   truncate_prompt_tokens, do_sample: false -> temperature 0 (absent: the given
//   temperature, default 1), stop_sequences -> stop, ignore_eos_token -> ignore_eos,
//   details -> token details, details + decoder_input_details -> the prompt's logprobs
//   (details.prefill, not when streaming); structured output (response_format,
//   structured_outputs, guided_*) as for completions; other sampling keys (temperature,
//   top_p, top_k, min_p, seed, repetition_penalty, presence/frequency_penalty,
//   stop_token_ids, allowed_token_ids, bad_words, ...) as in sampling.hpp; n must be 1;
//   best_of, num_beams and top_n_tokens are accepted and ignored (num_beams > 1 -> 400;
//   DJL maps top_n_tokens to n but answers with the first choice only, which is the
//   n = 1 reply); parameters.cache_salt as for completions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/json.hpp"
#include "api/sampling.hpp"
#include "base/result.hpp"

namespace vks::api {

// One prompt: text to tokenize, or token ids as given.
struct prompt_input {
  bool is_tokens = false;
  std::string text;
  std::vector<std::int32_t> tokens;
};

struct completion_request {
  std::string model;
  std::vector<prompt_input> prompts;   // >= 1; choice index = prompt_idx * n + seq
  engine::sampling_params sampling;    // max_tokens default 16 (0 only with echo)
  stream_settings stream;
  std::optional<int> logprobs;         // none, or top-k count [0, max_logprobs]
  bool echo = false;
  // echo + logprobs: the engine scores the prompt (sampling.prompt_logprobs = logprobs) so
  // the echoed tokens carry logprobs; the response then has no separate prompt_logprobs.
  bool echo_scores_prompt = false;
  bool add_special_tokens = true;
  std::optional<structured_output> structured;
  std::string request_id;
  int truncate_prompt_tokens = 0;      // keep the last k tokens of each prompt; 0 = all
  bool return_token_ids = false;       // vLLM: choices carry prompt_token_ids and token_ids
  std::string cache_salt;              // vLLM cache_salt (sampling.hpp); "" = none
};

result<completion_request> parse_completion_request(const json& body, const parse_limits& lim = {});

struct lmi_request {
  completion_request completion;       // one text prompt; logprobs 0 (token log_prob)
  bool details = false;
  bool return_full_text = false;
  bool prefill = false;                // details.prefill: the prompt tokens' logprobs
};

result<lmi_request> parse_lmi_request(const json& body, const parse_limits& lim = {});

}  // namespace vks::api
