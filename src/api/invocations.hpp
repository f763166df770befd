// Request bodies: JSON decoding with UTF-8 validation, the Content-Type rule, and the
// SageMaker /invocations dispatch (contracts.md 3.7): `messages` -> chat completions
// (even if `prompt` is also present, like vLLM), else `prompt` -> completions, else
// `inputs` -> LMI/TGI schema, else 400.
#pragma once

#include <string_view>

#include "api/json.hpp"
#include "base/result.hpp"

namespace vks::api {

// 400 "Request body is not valid UTF-8." / "JSON decode error: ..." / a cap of parse_json
// ("JSON nesting exceeds 128 levels", ...). Never throws.
result<json> parse_json_body(std::string_view body);

// Accepts "application/json" with optional parameters (case-insensitive). An empty value
// is accepted (clients that send none); anything else -> 400 naming the type (vLLM's
// current behaviour; older vLLM used 415).
result<void> check_json_content_type(std::string_view content_type);

enum class invocation_kind { chat, completion, lmi };
result<invocation_kind> classify_invocation(const json& body);

}  // namespace vks::api
