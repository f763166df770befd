// --strict-tools for the tool formats whose arguments are not one JSON document: one
// call's arguments in the format's own syntax, as grammar rules (a structural tag's
// structure body, or the pythonic reply grammar; strict_tools.hpp uses them). The
// function's parameters schema decides which parameters appear (in the schema's order,
// the required ones present, no others; a schema without properties allows any) and how
// each value is written, so that what the grammar allows the format's parser takes:
//   tagged (qwen3_xml, seed_oss, glm, minimax): a parameter whose schema type is "string"
//     is raw text up to the closing tag (with an enum or const: one of those strings);
//     any other value is a JSON document valid against the parameter's schema (the
//     parsers type values by the schema, tool_call_syntax.hpp typed_value);
//   gemma4: key:value with bare keys, strings between <|"|> quotes, objects, arrays,
//     integers and decimals without exponents, true/false/null, by the schema recursively;
//   python (pythonic, lfm2): name(key=value, ...), values as JSON documents (the pythonic
//     reader takes JSON strings and literals).
// A required parameter whose name the syntax cannot write makes the function unwritable
// (an error: the caller leaves that function to fail-closed parsing).
#pragma once

#include <string>

#include "api/json.hpp"
#include "base/result.hpp"
#include "text/grammar/grammar.hpp"
#include "text/grammar/json_schema.hpp"

namespace vks::api {

enum class arg_syntax { qwen3_xml, glm, minimax, gemma4, python };

// The text between a call's fixed opening (name included) and its fixed closing: the
// parameters of `params` (a parameters schema; null or not an object: any parameters).
// python: the whole call `name(...)`.
result<text::grammar::element> add_call_arguments(text::grammar::builder& b, arg_syntax syntax, const std::string& name,
                                                  const json& params, const text::grammar::json_grammar_options& opt);

}  // namespace vks::api
