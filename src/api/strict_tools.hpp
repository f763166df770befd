// --strict-tools: with tool_choice auto, the reply stays free text, but once the model
// starts a call (the format's start tag), the function name must be one of the offered
// tools and the arguments must satisfy its parameters schema, then the call closes: a
// malformed call cannot be generated. Built as a trigger-started structural tag
// (text/grammar/structural_tag.hpp), one structure per offered function: the call's fixed
// text up to the arguments (name included), the arguments as one JSON document, the fixed
// text that closes it. Formats whose arguments are one JSON document:
//   hermes          <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   granite         <|tool_call|>[{"name": "f", "arguments": {...}}]
//   mistral_v3      [TOOL_CALLS][{"name": "f", "arguments": {...}}]
//   mistral_v11     [TOOL_CALLS]f[ARGS]{...} (also for v13 templates: no [CALL_ID], whose id
//                   is free text; the parser then makes a 9-alphanumeric id)
//   deepseek_r1     <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{...}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//   deepseek_v31    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{...}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//   kimi            <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{...}<|tool_call_end|><|tool_calls_section_end|>
//   harmony         <|channel|>commentary to=functions.f <|constrain|>json<|message|>{...}<|call|>
//   functionary_v3_1  <function=f>{...}</function>
//   functionary_v3_2  >>>f\n{...} (one trigger per function, ">>>f\n"; the prompt's ">>>"
//                   is the tag's prefix, so the reply's first message is held too)
//   llama3_json     {"name": "f", "parameters": {...}}
// Formats whose arguments are the format's own syntax (strict_syntax.hpp writes them):
//   qwen3_xml       <tool_call>\n<function=f>\n<parameter=p>v</parameter>\n...</function>\n</tool_call>
//   seed_oss        the same between <seed:tool_call> and </seed:tool_call>
//   glm             <tool_call>f\n<arg_key>p</arg_key>\n<arg_value>v</arg_value>...\n</tool_call>
//   minimax         <minimax:tool_call>\n<invoke name="f">\n<parameter name="p">v</parameter>\n...</invoke>\n</minimax:tool_call>
//   gemma4          <|tool_call>call:f{p:<|"|>v<|"|>,...}<tool_call|>
//   lfm2            <|tool_call_start|>[f(p="v", ...), ...]<|tool_call_end|> (one call when
//                   parallel_tool_calls is false)
//   pythonic        a reply whose first non-blank character is "[" is a call list
//                   [f(p="v"), ...] and nothing after it but blanks; any other reply is free
//                   text (not a structural tag: the whole-reply form has no trigger; the
//                   <|python_start|> wrapper is not written)
// A function whose name or a required parameter's name the form cannot write is left out:
// a call of it stays fail-closed content.
// Markers that are control tokens are named in structured_output::special_texts so the
// engine lets the grammar match them (a grammar otherwise never allows control tokens).
#pragma once

#include <optional>
#include <string_view>

#include "api/chat_request.hpp"
#include "api/tool_calls.hpp"

namespace vks::api {

enum class strict_form {
  none, hermes, granite, mistral_v3, mistral_v11, deepseek_r1, deepseek_v31, kimi, harmony,
  functionary_v3_1, functionary_v3_2, llama3_json,
  // appended (#24, h24c): arguments in the format's own syntax
  qwen3_xml, seed_oss, glm, minimax, gemma4, lfm2, pythonic,
};

// The form for a format (variants told apart by the chat template's source).
strict_form strict_form_of(tool_call_format f, std::string_view template_source);

// The structural tag for the request's offered tools in that form, or nullopt when the form
// is none or the request offers no tools.
std::optional<structured_output> strict_tools_constraint(const chat_request& r, strict_form form);

}  // namespace vks::api
