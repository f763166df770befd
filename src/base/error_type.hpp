// The one table from an HTTP status to the error type name of an OpenAI-shaped error body
// (`"type"` in {"error": {"message", "type", "param", "code"}}). Both the HTTP server's own
// errors (http/errors) and the API's (api/errors) use it; it lives in base because http
// may not use api. Names follow vLLM and the Stainless-generated SDKs (openai-python,
// anthropic-python: 413 is RequestTooLargeError).
#pragma once

#include <string_view>

namespace vks {

// 400 BadRequestError, 401 AuthenticationError, 403 PermissionDeniedError,
// 404 NotFoundError, 405 MethodNotAllowedError, 408 RequestTimeoutError, 409 ConflictError,
// 413 RequestTooLargeError, 415 UnsupportedMediaTypeError, 422 UnprocessableEntityError,
// 429 RateLimitError, 431 RequestHeaderFieldsTooLargeError, 501 NotImplementedError,
// 503 ServiceUnavailableError, 504 TimeoutError; other 5xx InternalServerError, other
// statuses BadRequestError.
std::string_view error_type(int status) noexcept;

}  // namespace vks
