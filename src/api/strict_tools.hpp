// --strict-tools: with tool_choice auto, the reply stays free text, but once the model
// starts a call (the format's start tag), the function name must be one of the offered
// tools and the arguments must satisfy its parameters schema, then the block closes: a
// malformed call cannot be generated. Built as a trigger-started structural tag
// (text/grammar/structural_tag.hpp), one structure per offered function.
// Formats with JSON arguments after a fixed prefix: hermes (<tool_call>\n{"name": "f",
// "arguments": {...}}\n</tool_call>) and granite (<|tool_call|>[{"name": "f", "arguments":
// {...}}]); other formats get no constraint (nullopt) and rely on fail-closed parsing.
#pragma once

#include <optional>

#include "api/chat_request.hpp"
#include "api/tool_calls.hpp"

namespace vks::api {

bool strict_tools_supported(tool_call_format f);

// The structural tag for the request's offered tools in format f, or nullopt when the
// format is not supported or the request offers no tools.
std::optional<structured_output> strict_tools_constraint(const chat_request& r, tool_call_format f);

}  // namespace vks::api
