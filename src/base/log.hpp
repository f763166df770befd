// Logging: spdlog with one process-wide logger writing to stderr. Thread-safe.
// Levels: trace, debug, info, warn, error. `init` is called once by main (or tests).
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace vks::log {

// level: "trace" | "debug" | "info" | "warn" | "error" | "off"; unknown -> info.
void init(std::string_view level);

using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::trace;
using spdlog::warn;

}  // namespace vks::log
