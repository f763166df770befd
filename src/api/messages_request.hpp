// POST /v1/messages and /v1/messages/count_tokens (Anthropic Messages API) request parsing:
// the body is validated and translated into the chat_request the chat pipeline already
// serves (template, tools, constraint, sampling), so the dialect is a format, not a copy.
// Translation (the choices made where the two APIs differ are in docs/serving.md):
// - system: a string or a list of text blocks (joined with "\n") -> a leading system
//   message. A line starting "x-anthropic-billing-header:" (Claude Code's per-request
//   attribution, whose hash changes every request) is dropped so the prefix cache holds.
// - messages: role user | assistant; content a string or blocks: text; image/document ->
//   400 (text-only models); tool_use (assistant) -> tool_calls with the input as the
//   arguments object; tool_result (user) -> a `tool` message (content string or text
//   blocks) placed before the user's other text; thinking -> reasoning_content;
//   redacted_thinking -> dropped (opaque).
// - tools {name, description, input_schema} -> function tools; a tool without an
//   input_schema whose `type` names a server/Anthropic-defined tool (web_search_*, ...)
//   is ignored (listed in ignored_tools); tool_choice auto | any | tool | none ->
//   automatic | required | named | none; disable_parallel_tool_use -> parallel_tool_calls.
// - max_tokens required (>= 1); stop_sequences -> stop; temperature, top_p, top_k;
//   thinking {type: enabled|adaptive|disabled} -> chat_template_kwargs.enable_thinking;
//   metadata (an object) accepted and unused; stream.
#pragma once

#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/json.hpp"
#include "api/sampling.hpp"
#include "base/result.hpp"

namespace vks::api {

struct messages_request {
  chat_request chat;                       // what the chat pipeline serves
  std::vector<std::string> ignored_tools;  // server tools dropped (for a warning)
};

// count_tokens: max_tokens is not required (and not read).
result<messages_request> parse_messages_request(const json& body, const parse_limits& lim = {},
                                                bool count_only = false);

// Claude Code's attribution line removed from system text ("" if that was all).
std::string strip_attribution(std::string_view system_text);

}  // namespace vks::api
