// text_completion responses and streams (seed 000; contracts.md 6.2/6.3). Multiple
// prompts x n flatten to choices indexed prompt_idx * n + seq; events are fed with the
// prompt index they belong to (one engine request per prompt). usage sums the prompt
// tokens of every prompt once and the completion tokens of every choice.
// Echo: the prompt text is prepended to each choice's text (the first chunk of a stream);
// with logprobs, the echoed prompt tokens come first (token_logprobs[0] and
// top_logprobs[0] are null) when the engine sent prompt logprobs (the server asks for
// prompt_logprobs = logprobs when echo and logprobs are both set).
// Stream chunks carry "usage": null (seed 000) or the cumulative usage with
// continuous_usage_stats; include_usage adds a final chunk with "choices": [].
// return_token_ids (vLLM): each choice carries "prompt_token_ids" (its prompt's ids; in a
// stream on its first chunk) and "token_ids" (the generated ids, not the echoed prompt's;
// in a stream each chunk's, ids whose text is held back riding on the next chunk).
// Not thread-safe; one per request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/choice_tracker.hpp"
#include "api/json.hpp"
#include "api/response_common.hpp"
#include "base/error.hpp"
#include "engine/request.hpp"

namespace vks::api {

struct completion_output_settings {
  int n_prompts = 1;
  int n = 1;
  bool echo = false;
  std::vector<std::string> prompt_texts;  // per prompt; needed for echo
  std::optional<int> logprobs;            // top-k count, none = "logprobs": null
  bool prompt_logprobs = false;           // choices carry vLLM's prompt_logprobs list
  output_options options;
  bool return_token_ids = false;
  std::vector<token_id_list> prompt_token_ids;  // per prompt; needed for return_token_ids
};

class completion_accumulator {
 public:
  explicit completion_accumulator(completion_output_settings s);
  void on_event(int prompt_index, const engine::event& ev);
  bool done() const noexcept { return tracker_.done(); }
  const std::optional<vks::error>& error() const noexcept { return tracker_.error(); }
  json build(const response_meta& meta) const;

 private:
  struct choice_state {
    std::string text;
    std::vector<engine::position_logprobs> logprobs;
    token_id_list ids;  // with return_token_ids
    engine::finish_reason finish = engine::finish_reason::stop;
    engine::stop_reason stop;
  };
  template <class E>
  void add_piece(choice_state& c, const E& piece);

  completion_output_settings settings_;
  std::vector<choice_state> choices_;
  std::vector<std::optional<engine::prompt_logprobs_event>> prompt_lps_;
  choice_tracker tracker_;
};

struct completion_stream_settings {
  completion_output_settings output;
  bool include_usage = false;
  bool continuous_usage_stats = false;
  std::vector<int> n_prompt_tokens;  // per prompt, for continuous usage
};

class completion_stream {
 public:
  completion_stream(response_meta meta, completion_stream_settings s);
  std::vector<std::string> on_event(int prompt_index, const engine::event& ev);
  std::vector<std::string> finish();
  bool done() const noexcept { return tracker_.done(); }

 private:
  struct choice_state {
    bool started = false;  // echo text sent
    completion_logprobs lp;
    bool sent_prompt_ids = false;  // return_token_ids: prompt_token_ids went out
    token_id_list pending_ids;         // return_token_ids: not yet in a chunk
  };
  // ids: the choice's "prompt_token_ids"/"token_ids" members, added when return_token_ids.
  std::string chunk(int index, std::string text, const json& logprobs, const json& finish_reason,
                    const json& stop_reason, int n_prompt_tokens, int n_completion_tokens,
                    choice_state* ids = nullptr, int prompt_index = 0) const;
  // Echo text (first time) + delta; logprobs for this chunk.
  std::string begin_text(int prompt_index, choice_state& c, std::string_view text);
  void echo_logprobs(int prompt_index, choice_state& c);
  // The chunk of one piece of a choice's text (token or finished event), if any.
  template <class E>
  void piece_chunk(int prompt_index, int index, const E& piece, std::vector<std::string>& out);

  response_meta meta_;
  completion_stream_settings settings_;
  std::vector<choice_state> choices_;
  std::vector<std::optional<engine::prompt_logprobs_event>> prompt_lps_;
  choice_tracker tracker_;
};

}  // namespace vks::api
