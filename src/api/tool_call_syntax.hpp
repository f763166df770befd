// The grammar of each tool-call format's block body (the text between its start and end
// tags, see tool_calls.hpp for the formats): body -> calls, or nullopt when the body is not
// well formed. Pure functions of the body (and the offered tools, which type parameter
// values in the XML-like formats); ids are made here (the model's own where the body
// carries one). Also the whole-reply forms (llama3_json, pythonic).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "api/json.hpp"
#include "api/tool_calls.hpp"

namespace vks::api::syntax {

using calls = std::optional<std::vector<tool_call>>;
using body_parser = calls (*)(std::string_view body, const tool_catalog* tools);

// How a block format is delimited. end empty: the block runs to the end of the text.
struct block_syntax {
  std::string_view start;
  std::string_view end;
  body_parser parse;
};
// nullptr for formats that are not block formats.
const block_syntax* block_syntax_of(tool_call_format f);

// Ids: "chatcmpl-tool-<32 hex>" (vLLM's), or 9 alphanumerics (Mistral's templates refuse others).
std::string new_call_id();
std::string new_mistral_call_id();

// A parameter value written as text (XML-like formats), typed by its schema: strings stay
// text; integers, numbers, booleans, null, objects and arrays parse as JSON (Python's
// True/False/None accepted); without a schema, JSON when it parses, else text. A schema
// that allows several types ("type" as a list, anyOf/oneOf) keeps a parsed value of an
// allowed type and, where it allows strings, keeps any other value as text.
json typed_value(std::string_view text, const json* schema);

// One {"name", "arguments"|"parameters"} object (arguments an object or a JSON string).
bool json_call(const json& j, tool_call& out);

// Whole-reply forms: all or nothing.
calls parse_llama3_reply(std::string_view text);
calls parse_pythonic_reply(std::string_view text);  // python_calls.cpp
// One Functionary v3.2 message to a function: its JSON arguments (empty: {}), or for
// "python" code that is not a JSON object, {"code": body}.
calls parse_recipient_message(std::string_view name, std::string_view body);

}  // namespace vks::api::syntax
