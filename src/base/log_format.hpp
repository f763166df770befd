// The JSON line format of the process logger (base/log.hpp): one JSON object per line, for
// journald, Loki and other collectors: ts (UTC, ms), level, msg, thread, and request_id
// for messages about one request. Request-scoped messages start with "req=<id> "; the
// JSON format lifts that into request_id (the text format shows it as written).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vks::log {

// Switches the process logger (after init) to JSON lines. Thread-safe like spdlog.
void use_json_format();

// The JSON form of one record (no trailing newline); what use_json_format() writes.
std::string json_line(std::string_view level, std::int64_t unix_ms, std::size_t thread, std::string_view msg);

}  // namespace vks::log
