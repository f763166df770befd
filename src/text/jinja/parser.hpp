// Recursive-descent parser for the Jinja2 grammar subset chat templates use: statements
// if/elif/else, for/else (filter, recursive), set (plain, tuple, attribute, block), macro,
// call, filter, break/continue, generation; Jinja2's expression precedence.
#pragma once

#include <string>
#include <vector>

#include "text/jinja/ast.hpp"
#include "text/jinja/lexer.hpp"

namespace vks::text::jinja {

// Throws template_error (with line/col) on a syntax error.
body parse_template(const std::string& src, const std::vector<token>& tokens);

}  // namespace vks::text::jinja
