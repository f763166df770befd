// Status -> error type name (error_type.hpp).
#include "base/error_type.hpp"

namespace vks {

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
    case 415: return "UnsupportedMediaTypeError";
    case 422: return "UnprocessableEntityError";
    case 429: return "RateLimitError";
    case 431: return "RequestHeaderFieldsTooLargeError";
    case 501: return "NotImplementedError";
    case 503: return "ServiceUnavailableError";
    case 504: return "TimeoutError";
    default: return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

}  // namespace vks
