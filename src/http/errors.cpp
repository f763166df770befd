// OpenAI-shaped error bodies (see errors.hpp).
#include "http/errors.hpp"

#include <nlohmann/json.hpp>

namespace vks::http {

std::string_view error_type(int status) noexcept {
  switch (status) {
    case 400: return "BadRequestError";
    case 401: return "AuthenticationError";
    case 403: return "PermissionDeniedError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 408: return "RequestTimeoutError";
    case 409: return "ConflictError";
    case 413: return "RequestTooLargeError";
    case 422: return "UnprocessableEntityError";
    case 429: return "RateLimitError";
    case 431: return "RequestHeaderFieldsTooLargeError";
    case 501: return "NotImplementedError";
    case 503: return "ServiceUnavailableError";
    default: return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

std::string error_json(int status, std::string_view message, std::string_view param) {
  nlohmann::json e = {{"message", message}, {"type", error_type(status)}, {"param", nullptr}, {"code", status}};
  if (!param.empty()) e["param"] = param;
  // Replace invalid UTF-8 (e.g. echoed request bytes) instead of throwing.
  return nlohmann::json{{"error", std::move(e)}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

response error_response(int status, std::string_view message, std::string_view param) {
  return response::json(status, error_json(status, message, param));
}

}  // namespace vks::http
