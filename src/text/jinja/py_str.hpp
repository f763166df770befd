// Python str semantics on UTF-8 strings: code-point length/indexing, strip/split with
// Python's whitespace set, case mapping (utf8proc), str.title/capitalize, % formatting.
// Pure functions; no allocation beyond their results.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vks::text::jinja::py {

std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
bool is_ascii(std::string_view s);
std::size_t length(std::string_view s);  // code points
bool is_space(char32_t c);

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// Python str.split / str.rsplit; sep absent: whitespace runs, no empty parts.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, long maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, long maxsplit);
// Python str.splitlines (every line boundary Python knows); keepends keeps them.
std::vector<std::string> splitlines(std::string_view s, bool keepends = false);
std::string replace(std::string_view s, std::string_view from, std::string_view to, long count);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // Python str.title
std::string capitalize(std::string_view s);  // Python str.capitalize
long count(std::string_view s, std::string_view sub);
long find(std::string_view s, std::string_view sub);  // code-point index or -1

}  // namespace vks::text::jinja::py
