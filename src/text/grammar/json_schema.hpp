// JSON schemas, "any JSON object" and choice lists as grammars (grammar.hpp).
// Supported schema keywords: type (one or a list), enum, const, properties, required,
// additionalProperties (false, true or a schema), items, prefixItems, minItems,
// maxItems, minLength, maxLength, pattern (parsers.hpp regex, without '"', '\\' and
// control characters, matched on the raw characters), format (date, time,
// date-time, uuid; others are plain strings), anyOf, oneOf (as anyOf), allOf (of object
// schemas, merged), $ref to "#", "#/$defs/..", "#/definitions/.." or any "#/" pointer
// (recursion allowed), nullable, boolean schemas. Numeric bounds, multipleOf,
// uniqueItems, not, if/then/else and dependent keywords are not enforced; a `minimum`
// >= 0 on an integer or number only drops the minus sign.
// Choices made where JSON Schema leaves room (documented in docs/serving.md):
// - properties come out in the schema's order; optional ones may be skipped;
// - an object schema that lists properties and says nothing of additionalProperties
//   allows no others (OpenAI's strict mode; options.allow_additional_properties flips it);
//   an object schema without properties allows any members;
// - integers have at most 16 digits, fractions 16, exponents 2 (a looping model ends, and
//   every number fits a double);
// - whitespace between tokens (and before the top-level value): nothing, one space, or a
//   newline and up to 20 spaces or tabs, as pretty printers write (llama.cpp's choice; it
//   stops small models from looping on whitespace). Options can forbid it or give a regex.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "text/grammar/grammar.hpp"

namespace vks::text::grammar {

struct json_grammar_options {
  bool any_whitespace = true;          // false: no whitespace at all (compact JSON)
  std::string whitespace_pattern;      // non-empty: whitespace is this regex
  bool allow_additional_properties = false;
};

result<grammar> compile_json_schema(const nlohmann::ordered_json& schema, const json_grammar_options& opt = {});
// Adds the rules of `schema` to b and returns the element that matches one document
// (leading whitespace, then the value: compile_json_schema's root). The rules every
// schema shares (whitespace, strings, numbers, any value) are defined once per builder
// under fixed names, so all schemas added to one builder must use the same options.
result<element> add_json_schema(builder& b, const nlohmann::ordered_json& schema, const json_grammar_options& opt = {});
// Any JSON object (response_format json_object).
result<grammar> json_object_grammar(const json_grammar_options& opt = {});
// Exactly one of the strings, as raw text (guided_choice).
result<grammar> choice_grammar(const std::vector<std::string>& choices);

}  // namespace vks::text::grammar
