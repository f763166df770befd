// Pieces shared by every response builder: ids and timestamps, usage, stop_reason, the
// chat and completions logprobs objects, vLLM's prompt_logprobs list.
// Numbers: a logprob of -inf is written as -9999.0 (OpenAI/vLLM convention).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/json.hpp"
#include "engine/request.hpp"

namespace vks::api {

// vLLM's return_token_ids lists (prompt_token_ids, token_ids).
using token_id_list = std::vector<engine::token_id>;

// id, created and model of one response; every chunk of a stream repeats them.
struct response_meta {
  std::string id;          // "chatcmpl-<32 hex>" | "cmpl-<32 hex>"
  std::int64_t created = 0;  // unix seconds
  std::string model;       // the served model name
};

// 32 lowercase hex digits of a random (version 4) UUID without dashes, like vLLM's ids.
std::string random_uuid_hex();
// prefix + random_uuid_hex(), created = now.
response_meta make_meta(std::string_view prefix, std::string model);

// Which keys carry reasoning text in messages and deltas: both by default (seed 000 shows
// `reasoning_content`; current vLLM and TensorZero read `reasoning`).
enum class reasoning_keys { both, reasoning_content, reasoning };

struct output_options {
  reasoning_keys keys = reasoning_keys::both;
  // usage.prompt_tokens_details: null (seed 000) or {"cached_tokens": n} when enabled.
  bool prompt_tokens_details = false;
};

struct usage_totals {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
};

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"} (seed 000 order).
json usage_json(const usage_totals& u, const output_options& opt);
// matched string, stop token id, or null.
json stop_reason_json(const engine::stop_reason& r);
// Finite logprob or -9999.0.
double printable_logprob(float lp);
// UTF-8 bytes of a token as a list of ints.
json token_bytes_json(std::string_view text);
// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
json chat_logprobs_json(std::span<const engine::position_logprobs> lps, int top_k);
// vLLM prompt_logprobs: [null, {"<id>": {logprob, rank, decoded_token}}, ...].
json prompt_logprobs_json(const engine::prompt_logprobs_event& ev);
// Number of Unicode code points in UTF-8 text (invalid bytes count one each).
std::size_t code_points(std::string_view s);

// Completions logprobs object built incrementally (the same for whole responses and for
// each streamed chunk): parallel arrays tokens, token_logprobs, top_logprobs, text_offset.
class completion_logprobs {
 public:
  explicit completion_logprobs(std::size_t start_offset = 0) : offset_(start_offset) {}
  // A position with no logprob (the first echoed prompt token).
  void add_unscored(std::string_view token_text);
  void add(const engine::position_logprobs& lp, int top_k);
  json take();  // the object so far; starts a new (empty) one at the current offset
  bool empty() const noexcept { return tokens_.empty(); }

 private:
  json tokens_ = json::array(), token_logprobs_ = json::array(), top_ = json::array(), offsets_ = json::array();
  std::size_t offset_;  // code points before the next token
};

}  // namespace vks::api
