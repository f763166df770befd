// Structural tags (xgrammar's "structures + triggers" form, as vLLM takes it in
// response_format and structured_outputs.structural_tag) as a grammar (grammar.hpp).
// Meaning: the output is free text; where the text reaches a trigger, what follows must be
// one of the structures whose `begin` starts with that trigger: the rest of `begin`, one
// JSON document valid against the structure's schema (json_schema.hpp, leading whitespace
// allowed), then `end`; free text again after it. Free text never contains a trigger
// except as the start of a structure (the first trigger the text completes decides), and
// the output may end anywhere in free text, not inside a structure.
// The free text is a regular language: the Aho-Corasick automaton of the triggers, one
// right-recursive rule per state that has not completed a trigger; a completed trigger
// continues with the alternatives of its structures.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "text/grammar/grammar.hpp"
#include "text/grammar/json_schema.hpp"

namespace vks::text::grammar {

struct tag_structure {
  std::string begin;              // starts with one of the triggers
  nlohmann::ordered_json schema;  // a JSON schema (object or boolean)
  std::string end;
  // appended (#24): when set, the text between begin and end is what this adds to the
  // builder (a tool format's own argument syntax) instead of the schema's JSON document.
  // It must use add_json_schema with the options it is given, as the schemas do.
  std::function<result<element>(builder&, const json_grammar_options&)> body;
};

struct structural_tag {
  std::vector<tag_structure> structures;  // may be empty: the triggers are then forbidden
  std::vector<std::string> triggers;
  // appended (#24): text the output continues (the end of the prompt): the free text starts
  // as if it had been read, so a trigger it begins (Functionary v3.2's prompt ends with
  // ">>>") is completed by the output's first characters. Must not contain a whole trigger.
  std::string prefix;
};

// xgrammar's rules: every trigger is a non-empty string and no trigger is a prefix of
// another; every structure's begin and end is valid UTF-8 and its begin starts with a
// trigger. Fails with invalid_argument whose param names the offending member
// ("triggers[1]", "structures[0].begin").
// Budgets (hostile requests; the automaton is quadratic in the worst case): the triggers
// hold at most k_max_trigger_chars code points in all, there are at most
// k_max_structures structures, and compilation refuses an automaton whose states times
// distinct trigger characters exceed k_max_trigger_table.
inline constexpr std::size_t k_max_trigger_chars = 2048;
inline constexpr std::size_t k_max_structures = 1024;
inline constexpr std::size_t k_max_trigger_table = std::size_t{1} << 18;
result<void> validate(const structural_tag& tag);

// Validates, then compiles; a schema that does not compile fails with invalid_argument,
// param "structures[i].schema".
result<grammar> compile_structural_tag(const structural_tag& tag, const json_grammar_options& opt = {});

}  // namespace vks::text::grammar
