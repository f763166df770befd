// Structured output: a request's constraint (response_format, structured_outputs, the
// legacy guided_* keys) compiled into the grammar the engine masks tokens with.
// Errors are invalid_argument naming the field (a bad schema, regex or grammar -> 400).
#pragma once

#include <optional>
#include <string>

#include "api/chat_request.hpp"
#include "engine/request.hpp"

namespace vks::api {

// after: text behind which the constraint starts ("" = from the first token; the chat
// handler passes the reasoning end tag when the prompt leaves reasoning open).
result<engine::output_constraint> compile_structured(const structured_output& so, std::string after = {});

// What tool_choice forces, as a JSON-schema constraint (nullopt for none/auto):
// - named: the reply is that function's arguments (its `parameters` schema; any object
//   when it has none); the response turns the reply into one call (finish "stop");
// - required: the reply is a JSON list of one or more {"name", "parameters"} objects, one
//   branch per tool (at most one item when parallel_tool_calls is false); the response
//   parses the list into calls (finish "tool_calls"). vLLM forces both the same way.
std::optional<structured_output> tool_choice_constraint(const chat_request& r);

// The engine constraint of a request: nullopt without structured output; when the prompt
// leaves reasoning open (starts_in_reasoning), it starts behind the reasoning end tag so
// that the thinking stays free and the answer is constrained (vLLM does the same).
result<std::optional<engine::output_constraint>> request_constraint(const std::optional<structured_output>& so,
                                                                    bool starts_in_reasoning);

}  // namespace vks::api
