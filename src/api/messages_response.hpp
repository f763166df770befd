// Anthropic Messages responses: the `message` object and the typed event stream
// (message_start, ping, content_block_start / _delta / _stop, message_delta, message_stop;
// `error` on failure). Both builders take engine events through route_event over one
// choice_tracker and the choice's text through one choice_text (reasoning split, tool-call
// extraction), and turn its deltas into content blocks with one content_blocks
// (content_blocks.hpp), so the blocks streamed equal the blocks returned whatever the token
// cuts: thinking -> a `thinking` block (signature ""), text -> a `text` block, each call ->
// a `tool_use` block (id "toolu_<hex>", input the arguments object; streamed as one
// input_json_delta of its compact JSON).
// stop_reason: tool_use when the message has a tool_use block, max_tokens at the length
// limit, stop_sequence (with stop_sequence the matched string) on a stop string, else
// end_turn. Usage: input_tokens = prompt - cached, cache_read_input_tokens = cached,
// cache_creation_input_tokens 0, output_tokens; a stream's message_start has the prompt's
// size as input_tokens and message_delta the final counts (the SDKs take them from there).
// Every payload is a JSON object whose first member is its event `type` (the SSE event name).
// Not thread-safe; one per request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/content_blocks.hpp"
#include "api/choice_tracker.hpp"
#include "api/json.hpp"
#include "api/response_common.hpp"
#include "base/error.hpp"
#include "engine/request.hpp"

namespace vks::api {

// {"type": "error", "error": {"type": "invalid_request_error" | ..., "message"}}.
json anthropic_error_object(int status, std::string_view message);
json anthropic_error_object(const vks::error& e);
// The Anthropic error type of an HTTP status.
std::string_view anthropic_error_type(int status) noexcept;

struct messages_output_settings {
  choice_text_settings text;
  int n_prompt_tokens = 0;  // the stream's message_start usage
};

// The stop_reason and stop_sequence of a finished message.
std::string anthropic_stop_reason(const engine::finished_event& f, bool tool_use);

class messages_accumulator {
 public:
  explicit messages_accumulator(messages_output_settings s);
  void on_event(const engine::event& ev);
  bool done() const noexcept { return tracker_.done(); }
  const std::optional<vks::error>& error() const noexcept { return tracker_.error(); }
  json build(const response_meta& meta) const;

 private:
  void apply(const std::vector<content_blocks::op>& ops);

  messages_output_settings settings_;
  content_blocks blocks_;
  choice_tracker tracker_;
  json content_ = json::array();
  std::string stop_reason_ = "end_turn";
  json stop_sequence_ = nullptr;
};

class messages_stream {
 public:
  messages_stream(response_meta meta, messages_output_settings s);
  std::vector<std::string> start();  // message_start, ping
  std::vector<std::string> on_event(const engine::event& ev);
  std::vector<std::string> finish() { return {}; }
  bool done() const noexcept { return tracker_.done(); }

 private:
  void render(const std::vector<content_blocks::op>& ops, std::vector<std::string>& out) const;
  void on_finished(const engine::finished_event& f, std::vector<std::string>& out);

  response_meta meta_;
  messages_output_settings settings_;
  content_blocks blocks_;
  choice_tracker tracker_;
};

// usage {input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens}.
json anthropic_usage_json(const usage_totals& u);

}  // namespace vks::api
