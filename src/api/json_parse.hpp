// The bounded JSON reader: every JSON text that comes from a client or from generated text
// is parsed here, never with json::parse. Built on nlohmann's SAX parser (iterative) with
// our own tree builder, so nesting is refused before any deep tree exists, object members
// are appended without ordered_map's linear key search (duplicates, found by an ordered
// index: the last value wins in the first key's position, as json::parse does) and the
// work is O(n log n) in the input at worst, the tree linear in it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "api/json.hpp"
#include "base/result.hpp"

namespace vks::api {

// Caps on one JSON text. The defaults fit every request we serve (token-id prompts of
// 1M ids in all, logit_bias over a 100k vocabulary) and bound the tree: nesting keeps
// every recursive walk of the tree (copy, compare, dump, message normalisation, JSON-schema
// compilation) to max_depth frames.
struct json_limits {
  std::size_t max_depth = 128;            // open arrays/objects at once; 1 = scalars and `[]`
  std::size_t max_values = 1'000'000;     // values in the whole text (containers included)
  std::size_t max_members = 100'000;      // members of one object (after duplicates merge)
};

inline constexpr json_limits default_json_limits{};

// Parses one JSON text (strict: only whitespace may follow it; no comments). Errors
// (errc::invalid_argument, 400 at the API):
//   malformed text     "JSON decode error: <nlohmann's parse_error message>"
//   nesting            "JSON nesting exceeds 128 levels"
//   values             "JSON text has more than 1000000 values"
//   members            "JSON object has more than 100000 members"
// Never throws; allocation failure is errc::out_of_memory. Does not check UTF-8 beyond what
// the JSON grammar checks (see parse_json_body).
result<json> parse_json(std::string_view text, const json_limits& limits = default_json_limits);

// parse_json for text whose failure is an ordinary outcome (model output that may or may
// not be JSON, optional JSON-in-a-string fields): a discarded value on any error.
json parse_json_or_discarded(std::string_view text, const json_limits& limits = default_json_limits);

// The message for a JSON-in-a-string request field `param` (guided_json, structural_tag, ...)
// whose parse_json failed: "<param> is not valid JSON." for malformed text, "<param>: <the
// cap's message>" for a cap.
std::string json_string_error(std::string_view param, const vks::error& e);

}  // namespace vks::api
