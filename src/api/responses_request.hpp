// POST /v1/responses (OpenAI Responses API) request parsing: the body becomes the chat
// messages of this turn plus a chat_request for the rest (tools, tool_choice, constraint,
// sampling), so the chat pipeline serves it; the server prepends the stored conversation
// of previous_response_id and the instructions (responses_handler.cpp).
// Translation (the choices made where the spec leaves room are in docs/serving.md):
// - input: a string (one user message) or items: messages ({role, content} with or
//   without type "message"; content a string or input_text/output_text parts; images and
//   files -> 400), function_call (-> an assistant message's tool_calls, consecutive calls
//   merged; a custom_tool_call is one with arguments {"input": ...}), function_call_output
//   and custom_tool_call_output (-> a `tool` message), reasoning (its reasoning_text, or
//   else summary text, -> reasoning_content of the assistant message that follows);
//   item_reference -> 400.
// - instructions -> a system message in front (not carried to follow-ups, as OpenAI);
// - tools: function tools {type: "function", name, description, parameters}; every other
//   type (web_search, file_search, local_shell, custom, mcp, ...) is ignored and listed in
//   ignored_tools (Codex sends them); tool_choice "auto" | "none" | "required" |
//   {type: "function", name}; parallel_tool_calls;
// - text.format: text | json_object | json_schema {schema} -> the structured-output engine;
// - max_output_tokens -> max_tokens; temperature, top_p; reasoning.effort as chat's
//   reasoning_effort ("none" turns thinking off); store (default true),
//   previous_response_id, metadata, user, truncation, include: accepted (echoed).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/json.hpp"
#include "api/sampling.hpp"
#include "base/result.hpp"

namespace vks::api {

struct responses_request {
  chat_request chat;                 // messages: this turn's input only (see above)
  json input_messages = json::array();
  std::optional<std::string> instructions;
  std::string previous_response_id;  // "" = none
  bool store = true;
  std::vector<std::string> ignored_tools;
  // The request's settings as the response object repeats them, in its field order:
  // instructions, max_output_tokens, metadata, parallel_tool_calls, previous_response_id,
  // reasoning, store, temperature, text, tool_choice, tools, top_p, truncation, user.
  json echo = json::object();
};

result<responses_request> parse_responses_request(const json& body, const parse_limits& lim = {});

// The output items of a response as chat messages for a follow-up (one assistant message:
// its text, reasoning and tool calls).
json output_to_messages(const json& output);

}  // namespace vks::api
