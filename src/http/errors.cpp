// OpenAI-shaped error bodies (see errors.hpp).
#include "http/errors.hpp"

#include <nlohmann/json.hpp>

namespace vks::http {

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
