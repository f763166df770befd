// Text forms that compile to a grammar (grammar.hpp):
// - GBNF, llama.cpp's grammar notation (also what vLLM's xgrammar backend takes as EBNF):
//   `name ::= alternatives`, "literals", [character classes] with ranges and ^, `.` (any
//   character), ( groups ), `|`, `*` `+` `?` `{m}` `{m,}` `{m,n}`, `#` comments; escapes
//   \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH. A rule ends where the next
//   `name ::=` begins; newlines are plain whitespace. The start rule is `root`.
// - Regular expressions as structured output uses them (the whole output must match):
//   literals, `.` (not newline), classes with ranges, ^ and \d \w \s \D \W \S, groups
//   ( ), (?: ), (?P<n> ), (?<n> ), `|`, `*` `+` `?` `{m}` `{m,}` `{m,n}` (a trailing ? or +
//   marking lazy/possessive changes nothing here), ^ at the start and $ at the end.
//   Backreferences, lookaround and \b are refused (invalid_argument).
// Errors are invalid_argument with the byte offset of the problem.
#pragma once

#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "text/grammar/grammar.hpp"

namespace vks::text::grammar {

result<grammar> parse_gbnf(std::string_view text);

// Adds the rules for `pattern` to b and returns the element that matches it. Code points
// in `excluded` are removed from every character of the pattern (JSON strings exclude
// '"', '\\' and control characters, so that a pattern cannot end the string).
result<element> compile_regex(builder& b, std::string_view pattern, std::vector<char_range> excluded = {});
result<grammar> parse_regex(std::string_view pattern);

}  // namespace vks::text::grammar
