// What a client asks the engine for (request, sampling_params) and what the engine sends
// back (event). Plain values: no sockets, no JSON. The api layer fills these from
// validated OpenAI/SageMaker requests; the engine thread consumes them and posts events
// through an event_sink (engine.hpp).
// Units: token counts are tokens; logprobs are natural logs; ids index the model vocab.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/error.hpp"
#include "base/result.hpp"
#include "engine/pooling.hpp"

namespace vks::text::grammar { struct grammar; }

namespace vks::engine {

using token_id = std::int32_t;

// Per-request sampling configuration, already validated by the api layer (ranges are
// documented there; the engine asserts nothing about them beyond what sampler.cpp needs).
struct sampling_params {
  float temperature = 1.0f;          // < 1e-5 means greedy (argmax)
  float top_p = 1.0f;                // (0, 1]; 1 = off
  int top_k = 0;                     // 0 = off (the api maps -1 to 0)
  float min_p = 0.0f;                // [0, 1]; 0 = off
  std::optional<std::uint64_t> seed; // none: the engine draws one per request
  int n = 1;                         // sibling sequences sharing the prompt (seed + i each)
  int max_tokens = -1;               // -1: until the context is full (resolve_max_tokens)
  int min_tokens = 0;                // EOS and stop_token_ids are masked until reached
  std::vector<std::string> stop;     // stop strings (non-empty, matched on decoded text)
  std::vector<token_id> stop_token_ids;
  bool include_stop_str_in_output = false;
  bool ignore_eos = false;           // EOS neither ends generation nor is masked
  float presence_penalty = 0.0f;     // OpenAI: over output tokens
  float frequency_penalty = 0.0f;    // OpenAI: over output tokens
  float repetition_penalty = 1.0f;   // vLLM: over prompt + output tokens; 1 = off
  std::vector<std::pair<token_id, float>> logit_bias;  // added to the raw logits
  std::vector<token_id> allowed_token_ids;  // non-empty: every other token is masked (EOS too)
  std::vector<std::string> bad_words;       // vLLM bad_words; llm_engine::submit tokenizes them
  std::vector<std::vector<token_id>> bad_words_ids;  // ... into these (bad_words.hpp); the sampler's input
  int logprobs = -1;                 // -1: none; 0: sampled token only; k: plus top-k
  int prompt_logprobs = -1;          // -1: none; k >= 0 as above, per prompt position
  bool skip_special_tokens = true;
  bool spaces_between_special_tokens = true;
};

// Structured output: every sequence's text must be a sentence of `grammar` (tokens it
// refuses are masked before sampling; the end-of-generation tokens are allowed only once
// the text is complete, and forced when nothing else can follow). With a non-empty
// `after`, the constraint starts only behind the first occurrence of that text in the
// output (e.g. "</think>": reasoning is free, the answer is constrained).
struct output_constraint {
  std::shared_ptr<const text::grammar::grammar> grammar;
  std::string after;
  // appended (#24): control tokens (by their exact vocabulary text) the grammar may match as
  // text; other control tokens are never allowed by the grammar (a tool format's markers).
  std::vector<std::string> special_texts;
};

struct request {
  std::string id;                    // for logs ("chatcmpl-..."); not interpreted
  std::vector<token_id> prompt;      // non-empty, ids < n_vocab
  sampling_params params;
  std::optional<output_constraint> constraint;
  // Fairness group: waiting work is admitted round-robin across groups. The server gives
  // every engine request of one client request (its prompts) the same group; 0 = a group
  // of its own.
  std::uint64_t group = 0;
  // vLLM's cache_salt: prefix-cache blocks are shared only between requests with the same
  // salt ("" = the common, unsalted cache). Opaque bytes; the server may prefix the
  // caller's key identity.
  std::string cache_salt;
  // A stateful session (SageMaker sticky sessions; 0 = none): when sequence 0 finishes
  // (stop or length), the engine pins its prefix-cache chain (prompt and generated tokens
  // in whole blocks) for this key, replacing the session's previous pins, so the session's
  // next request finds them cached whatever ran in between (engine::release_session).
  std::uint64_t session = 0;
  // An embedding request: the prompt is prefilled and never sampled; its final-normed
  // hidden rows are pooled this way and sent as one embedding_event (its terminal event).
  // params.n must be 1; the other sampling settings are ignored. none = generation.
  pooling embed = pooling::none;
  bool is_embedding() const { return embed != pooling::none; }
};

// One candidate token with its log-probability under the RAW model distribution
// (log-softmax of the logits before bias, penalties and temperature: vLLM's default
// "raw_logprobs"). rank is 1-based among all vocab entries (1 = most likely).
struct token_logprob {
  token_id id = 0;
  float logprob = 0.0f;              // may be -inf; the api prints -9999.0 then
  int rank = 0;
  std::string text;                  // the token's bytes (may be partial UTF-8)
};

// Logprobs of one generated (or prompt) position: the token actually there, and the
// `logprobs` most likely alternatives in descending order (may include the token itself).
struct position_logprobs {
  token_logprob token;
  std::vector<token_logprob> top;
};

enum class finish_reason { stop, length, abort, error };
const char* to_string(finish_reason r) noexcept;

// Why a `stop` finish happened: a matched stop string, a stop token id, or nothing (EOS).
using stop_reason = std::variant<std::monostate, std::string, token_id>;

struct usage {
  int n_prompt_tokens = 0;
  int n_completion_tokens = 0;       // of this sequence (token events) or all (finished)
  int n_cached_tokens = 0;           // prompt tokens served from the prefix cache
};

// New output of one sequence: the engine (sequence_output) sends one per sampled token,
// the token that ends the sequence included, so tokens holds that one id (and logprobs
// its entry when logprobs were asked; tokens[i] pairs with logprobs[i]). text is the
// decoded delta that is safe to show: it lags the tokens while a stop string may be
// starting or a UTF-8 character is unfinished, and an EOS or stop id adds none (unless
// include_stop_str_in_output). When the token ends the sequence, text holds what the
// stop rules release (everything before a stop string's match; held-back text on any
// other end). Empty deltas are still sent (usage counts); the api suppresses empty chunks.
struct token_event {
  int seq = 0;                       // 0..n-1
  std::vector<token_id> tokens;
  std::string text;
  std::vector<position_logprobs> logprobs;
  int n_completion_tokens = 0;       // cumulative for this sequence
};

// Sent once, before any token_event, when prompt_logprobs >= 0: one entry per prompt
// position; position 0 has no logprob (nullopt), like vLLM, so its token (id and text)
// is given apart in first_token.
struct prompt_logprobs_event {
  token_logprob first_token;
  std::vector<std::optional<position_logprobs>> positions;
};

// Terminal event of one sequence, sent right after the token_event of its last token
// (or alone, on abort). tokens and logprobs stay empty: every sampled token had its own
// token_event. text is what only the end releases: the bytes of an unfinished UTF-8
// character, on every end but a stop string (whose match drops what follows it); it is
// empty otherwise, and on abort. Pinned by tests/engine/test_sequence_output.cpp.
struct finished_event {
  int seq = 0;
  finish_reason reason = finish_reason::stop;
  stop_reason stop;
  std::vector<token_id> tokens;
  std::string text;
  std::vector<position_logprobs> logprobs;
  usage seq_usage;                   // prompt, this sequence's completion, cached
};

// Terminal event of the whole request (all sequences); no event follows it.
struct error_event {
  vks::error err;
};

// Terminal event of an embedding request (request::embed): the pooled final-normed hidden
// state (n_embd floats, not normalised: the api normalises and truncates).
struct embedding_event {
  std::vector<float> embedding;
  int n_prompt_tokens = 0;
};

using event = std::variant<token_event, prompt_logprobs_event, finished_event, error_event, embedding_event>;

// max_tokens to run with: the requested value, or all the context left when -1. Fails
// with errc::context_overflow (naming both counts) when the prompt alone, or the prompt
// plus the requested tokens, exceed n_ctx.
result<int> resolve_max_tokens(int n_prompt, int requested, int n_ctx);

}  // namespace vks::engine
