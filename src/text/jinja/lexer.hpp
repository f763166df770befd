// Jinja lexer with Hugging Face's settings (trim_blocks, lstrip_blocks, default delimiters,
// keep_trailing_newline=False). Produces a flat token list: template text (whitespace
// control already applied) and the tokens inside {{ }} / {% %} tags. Comments and raw
// blocks are resolved here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vks::text::jinja {

enum class tok : std::uint8_t { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

struct token {
  tok t = tok::eof;
  std::string s;       // text, name, string value, operator
  std::int64_t i = 0;  // integer
  double f = 0;        // floating
  std::size_t offset = 0;  // byte offset in the normalised source
};

// Newlines normalised to \n and one trailing newline dropped (Jinja's default).
std::string normalise_source(std::string_view src);

// Throws template_error (with line/col) on malformed input.
std::vector<token> lex(const std::string& src);

// 1-based line and column of a byte offset.
void offset_to_line_col(const std::string& src, std::size_t offset, int& line, int& col);

}  // namespace vks::text::jinja
