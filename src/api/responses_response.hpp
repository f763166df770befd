// OpenAI Responses API responses: the `response` object and the typed event stream
// (response.created, response.in_progress, then per output item output_item.added,
// content_part.added, output_text.delta / reasoning_text.delta /
// function_call_arguments.delta, their .done events, content_part.done, output_item.done;
// then response.completed or response.incomplete; `error` on failure). Every event carries
// an increasing sequence_number (from 0); every payload's first member is its `type`.
// Both builders take engine events through route_event over one choice_tracker and turn
// the choice's text into items with content_blocks (the same assembly as the Anthropic
// format: thinking -> a `reasoning` item with one reasoning_text part, text -> a `message`
// item with one output_text part, each call -> a `function_call` item), so streamed and
// whole responses hold the same items whatever the cuts.
// status: completed; incomplete with incomplete_details.reason "max_output_tokens" at the
// length limit. usage: input_tokens (cached included), input_tokens_details.cached_tokens,
// output_tokens, output_tokens_details.reasoning_tokens (0: not counted apart), total.
// Not thread-safe; one per request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/choice_tracker.hpp"
#include "api/content_blocks.hpp"
#include "api/json.hpp"
#include "api/response_common.hpp"
#include "base/error.hpp"
#include "engine/request.hpp"

namespace vks::api {

struct responses_output_settings {
  choice_text_settings text;
  int n_prompt_tokens = 0;
  json echo = json::object();  // responses_request::echo
};

// The output items built from content_blocks operations (shared by both builders).
class response_items {
 public:
  // Applies `o`; returns the index of the item it touched.
  std::size_t apply(const content_blocks::op& o);
  const json& items() const noexcept { return items_; }
  const json& item(std::size_t i) const { return items_[i]; }

 private:
  json items_ = json::array();
};

// {"id", "object": "response", "created_at", "status", ..., "output", ..., "usage"}.
json response_object(const response_meta& meta, const json& echo, std::string_view status, const json& output,
                     const json& usage, const json& incomplete_details = nullptr, const json& error = nullptr);
json responses_usage_json(const usage_totals& u);

class responses_accumulator {
 public:
  explicit responses_accumulator(responses_output_settings s);
  void on_event(const engine::event& ev);
  bool done() const noexcept { return tracker_.done(); }
  const std::optional<vks::error>& error() const noexcept { return tracker_.error(); }
  json build(const response_meta& meta) const;

 private:
  responses_output_settings settings_;
  content_blocks blocks_;
  response_items items_;
  choice_tracker tracker_;
  bool length_ = false;
};

class responses_stream {
 public:
  responses_stream(response_meta meta, responses_output_settings s);
  std::vector<std::string> start();  // response.created, response.in_progress
  std::vector<std::string> on_event(const engine::event& ev);
  std::vector<std::string> finish() { return {}; }
  bool done() const noexcept { return tracker_.done(); }
  // The response of the last lifecycle event (completed / incomplete once done).
  const json& final_response() const noexcept { return final_; }

 private:
  void emit(json ev, std::vector<std::string>& out);
  void render(const std::vector<content_blocks::op>& ops, std::vector<std::string>& out);
  void on_finished(const engine::finished_event& f, std::vector<std::string>& out);

  response_meta meta_;
  responses_output_settings settings_;
  content_blocks blocks_;
  response_items items_;
  choice_tracker tracker_;
  int sequence_ = 0;
  json final_;
};

}  // namespace vks::api
