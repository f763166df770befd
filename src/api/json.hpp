// The JSON type of the api layer: nlohmann::ordered_json, so that responses keep the
// field order of the seed documents and templates see messages' keys as sent. Serialise
// with dump_json (invalid UTF-8 from partial tokens becomes U+FFFD, never an exception).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vks::api {

using json = nlohmann::ordered_json;

inline std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace vks::api
