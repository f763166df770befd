// chat.completion responses and chat.completion.chunk streams in the shapes of seed 000
// (field order included). Both consume engine events, so the server only forwards them:
//   non-stream: chat_accumulator.on_event(ev)...; when done(): build(meta, opts)
//   stream:     chat_stream.start() first, then on_event(ev) per event, and finish()
//               when the request is done; each returns JSON payloads (the SSE writer adds
//               "data: " framing and the final "data: [DONE]").
// Reasoning: when a reasoning splitter is configured, reasoning text goes to the keys
// chosen by output_options::keys (message: after tool_calls, null when there was none;
// delta: before content), never into content; include_reasoning=false drops it. Without
// a splitter the keys are absent (seed 000: "only present for reasoning models").
// Each choice's text goes through one choice_text (reasoning split, then tool calls), and
// events through route_event over one choice_tracker, in both builders.
// Tool calls: with a chat_output_settings::tool_calls format, content (after the reasoning split)
// goes through a tool_call_parser; calls fill message.tool_calls, or stream as one
// delta {"tool_calls": [{index, id, type, function: {name, arguments}}]} per call, and a
// choice that made calls finishes with "tool_calls" (unless finish_tool_calls is false:
// a named tool_choice keeps "stop", like OpenAI and vLLM).
// Fail-closed tool calls (a block kept as content) add text to the choice's "warnings" list
// (non-stream: on the choice after stop_reason; stream: a chunk of their own, empty delta,
// right after the piece's text), absent when there is none.
// Token ids (vLLM's return_token_ids, when chat_output_settings::prompt_token_ids is set):
// the response has a top-level "prompt_token_ids" (in a stream: on every role chunk) and
// each choice "token_ids" (in a stream: the ids of each chunk's tokens; ids whose text is
// held back ride on the next chunk of that choice, the finish chunk at the latest).
// Not thread-safe; one per request, used by the connection coroutine.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "api/choice_text.hpp"
#include "api/choice_tracker.hpp"
#include "api/json.hpp"
#include "api/reasoning.hpp"
#include "api/response_common.hpp"
#include "api/tool_calls.hpp"
#include "base/error.hpp"
#include "engine/request.hpp"

namespace vks::api {

struct chat_choice {
  int index = 0;
  std::string role = "assistant";
  std::optional<std::string> content = std::string{};  // nullopt -> null
  bool reasoning_enabled = false;
  std::optional<std::string> reasoning;                // null when enabled but empty
  engine::finish_reason finish = engine::finish_reason::stop;
  engine::stop_reason stop;
  std::optional<std::vector<engine::position_logprobs>> logprobs;  // null when not asked
  int top_logprobs = 0;
  std::vector<tool_call> tool_calls;
  bool finish_tool_calls = true;  // finish_reason "tool_calls" when there are calls
  std::optional<std::vector<engine::token_id>> token_ids;  // written when set
  std::vector<std::string> warnings;  // tool-call blocks kept as content: choice "warnings" when any
};

json chat_message_json(const chat_choice& c, const output_options& opt);
json chat_completion_json(const response_meta& meta, std::span<const chat_choice> choices,
                          const usage_totals& usage, const json& prompt_logprobs,
                          const output_options& opt, const std::optional<token_id_list>& prompt_token_ids = std::nullopt);

// Per-request settings both builders need.
struct chat_output_settings {
  int n = 1;
  bool reasoning = false;            // the model thinks: split <think> text out
  bool starts_in_reasoning = false;  // the prompt opened <think> (prompt_opens_reasoning)
  bool include_reasoning = true;
  reasoning_tags tags;
  bool logprobs = false;
  int top_logprobs = 0;
  std::string role = "assistant";
  tool_call_format tool_calls = tool_call_format::none;  // extract tool calls from content
  std::string tool_name;           // the function of tool_call_format::named_arguments
  bool finish_tool_calls = true;   // ... and finish such choices with "tool_calls"
  output_options options;
  std::optional<token_id_list> prompt_token_ids;  // return_token_ids: the prompt's ids
  // appended (#24)
  std::shared_ptr<const tool_catalog> tools;  // the request's tools (names validated, values typed)
  bool parallel_tool_calls = true;

  // The choice_text pipeline these settings ask for.
  choice_text_settings text_settings() const {
    return {reasoning, starts_in_reasoning, tags, tool_calls, tool_name, tools, parallel_tool_calls};
  }
};

class chat_accumulator {
 public:
  explicit chat_accumulator(chat_output_settings s);
  void on_event(const engine::event& ev);
  bool done() const noexcept { return tracker_.done(); }
  const std::optional<vks::error>& error() const noexcept { return tracker_.error(); }
  json build(const response_meta& meta) const;

 private:
  struct choice_state {
    explicit choice_state(const choice_text_settings& s) : text(s) {}
    choice_text text;
    std::string content, reasoning;
    std::vector<tool_call> calls;
    std::vector<std::string> warnings;
    std::vector<engine::position_logprobs> logprobs;
    token_id_list ids;                // with return_token_ids
    engine::finish_reason finish = engine::finish_reason::stop;
    engine::stop_reason stop;
  };
  template <class E>
  void add_piece(choice_state& c, const E& piece);

  chat_output_settings settings_;
  std::vector<choice_state> choices_;
  choice_tracker tracker_;
  json prompt_logprobs_;
};

struct chat_stream_settings {
  chat_output_settings output;
  bool include_usage = false;
  bool continuous_usage_stats = false;
  int n_prompt_tokens = 0;           // for continuous usage before the first finish
  std::optional<std::string> echo;   // with echo: text of the last message, sent after the role
};

class chat_stream {
 public:
  chat_stream(response_meta meta, chat_stream_settings s);
  // The first chunk of every choice: delta {"role": ..., "content": ""} (+ echo chunks).
  std::vector<std::string> start();
  // Zero or more chunks. An error_event yields one {"error": ...} payload.
  std::vector<std::string> on_event(const engine::event& ev);
  // After the terminal event: the usage chunk (choices: []) when include_usage.
  std::vector<std::string> finish();
  bool done() const noexcept { return tracker_.done(); }

 private:
  struct choice_state {
    explicit choice_state(const choice_text_settings& s) : text(s) {}
    choice_text text;
    int n_tool_calls = 0;
    token_id_list pending_ids;        // with return_token_ids: not yet in a chunk
  };
  // token_ids: the choice's "token_ids" member (null = absent).
  json chunk_json(int index, json delta, const json& logprobs, const json& finish_reason,
                  const json& stop_reason, const json& token_ids = nullptr) const;
  std::string chunk(int index, json delta, const json& logprobs, const json& finish_reason,
                    const json& stop_reason, const json& token_ids = nullptr) const {
    return dump_json(chunk_json(index, std::move(delta), logprobs, finish_reason, stop_reason, token_ids));
  }
  // The pending ids as a JSON list (emptied), or null without return_token_ids.
  json take_ids(choice_state& c) const;
  json delta_json(const choice_text::delta& d, bool force_content) const;
  // The choice's next piece of text: its tokens and text go into the pipeline.
  template <class E>
  choice_text::delta take_piece(choice_state& c, const E& piece) const;
  // One chunk per call: delta {"tool_calls": [{index, id, type, function}]}.
  void tool_call_chunks(int index, choice_state& c, const std::vector<tool_call>& calls,
                        std::vector<std::string>& out) const;
  void warning_chunk(int index, const std::vector<std::string>& warnings, std::vector<std::string>& out) const;
  void on_finished(int index, const engine::finished_event& f, std::vector<std::string>& out);

  response_meta meta_;
  chat_stream_settings settings_;
  std::vector<choice_state> choices_;
  choice_tracker tracker_;
};

}  // namespace vks::api
