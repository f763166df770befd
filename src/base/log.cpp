// Process-wide logger setup.
#include "base/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace vks::log {

void init(std::string_view level) {
  auto logger = spdlog::stderr_color_mt("vkserve");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(std::string(level)));
}

}  // namespace vks::log
