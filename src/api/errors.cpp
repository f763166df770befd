// Error mapping (errors.hpp).
#include "api/errors.hpp"

namespace vks::api {

int http_status(errc c) noexcept {
  switch (c) {
    case errc::invalid_argument:
    case errc::parse:
    case errc::context_overflow: return 400;
    case errc::not_found: return 404;
    case errc::overloaded: return 429;
    case errc::unsupported: return 501;
    case errc::shutting_down:
    case errc::device_lost: return 503;
    case errc::timeout: return 504;
    case errc::cancelled: return 499;
    case errc::io:
    case errc::out_of_memory:
    case errc::internal: return 500;
  }
  return 500;
}

json error_object(int status, std::string_view message, std::string_view param) {
  json inner;
  inner["message"] = message;
  inner["type"] = error_type(status);
  inner["param"] = param.empty() ? json(nullptr) : json(param);
  inner["code"] = status;
  json j;
  j["error"] = std::move(inner);
  return j;
}

json error_object(const vks::error& e) { return error_object(http_status(e.code), e.message, e.param); }

std::string error_body(const vks::error& e) { return dump_json(error_object(e)); }

vks::error model_not_found(std::string_view model) {
  return make_error(errc::not_found, "The model `" + std::string(model) + "` does not exist.", "model");
}

vks::error invalid_json(std::string_view detail) {
  return make_error(errc::invalid_argument, "JSON decode error: " + std::string(detail));
}

}  // namespace vks::api
