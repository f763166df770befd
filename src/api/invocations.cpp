// Body decoding and /invocations dispatch (invocations.hpp).
#include "api/invocations.hpp"

#include <cctype>
#include <string>

#include "api/errors.hpp"
#include "api/json_parse.hpp"
#include "base/utf8.hpp"

namespace vks::api {

result<json> parse_json_body(std::string_view body) {
  if (!utf8::valid(body)) return fail(errc::invalid_argument, "Request body is not valid UTF-8.");
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return fail(invalid_json("empty body"));
  return parse_json(body);
}

result<void> check_json_content_type(std::string_view ct) {
  std::string_view base = ct.substr(0, ct.find(';'));
  while (!base.empty() && (base.back() == ' ' || base.back() == '\t')) base.remove_suffix(1);
  while (!base.empty() && (base.front() == ' ' || base.front() == '\t')) base.remove_prefix(1);
  if (base.empty()) return ok();
  std::string lower(base);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "application/json") return ok();
  return fail(errc::invalid_argument,
              "Unsupported Media Type: Only 'application/json' is allowed, got '" + std::string(base) + "'.");
}

result<invocation_kind> classify_invocation(const json& body) {
  if (!body.is_object()) return fail(errc::invalid_argument, "The request body must be a JSON object.");
  auto present = [&](const char* k) { return body.contains(k) && !body[k].is_null(); };
  if (present("messages")) return invocation_kind::chat;
  if (present("prompt")) return invocation_kind::completion;
  if (present("inputs")) return invocation_kind::lmi;
  return fail(errc::invalid_argument,
              "Cannot find suitable handler for request. The body must contain `messages` (chat completions), "
              "`prompt` (completions) or `inputs` (LMI schema).");
}

}  // namespace vks::api
