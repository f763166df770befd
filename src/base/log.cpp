// Process-wide logger setup, and the JSON line format (base/log_format.hpp).
#include "base/log.hpp"
#include "base/log_format.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <chrono>
#include <ctime>

namespace vks::log {
namespace {

void append_escaped(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;  // UTF-8 passes through; invalid bytes are the message's own
        }
    }
  }
}

class json_formatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& m, spdlog::memory_buf_t& dest) override {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(m.time.time_since_epoch()).count();
    const auto lv = spdlog::level::to_string_view(m.level);
    const std::string line = json_line(std::string_view(lv.data(), lv.size()), ms, m.thread_id,
                                       std::string_view(m.payload.data(), m.payload.size()));
    dest.append(line.data(), line.data() + line.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<json_formatter>(); }
};

}  // namespace

std::string json_line(std::string_view level, std::int64_t unix_ms, std::size_t thread, std::string_view msg) {
  std::string out;
  out.reserve(msg.size() + 96);
  const std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[40];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unix_ms % 1000));
  out += R"({"ts":")";
  out += ts;
  out += R"(","level":")";
  append_escaped(out, level);
  out += '"';
  if (msg.starts_with("req=")) {  // "req=<id> rest": the request id as its own field
    const auto sp = msg.find(' ');
    out += R"(,"request_id":")";
    append_escaped(out, msg.substr(4, sp == std::string_view::npos ? std::string_view::npos : sp - 4));
    out += '"';
    msg = sp == std::string_view::npos ? std::string_view() : msg.substr(sp + 1);
  }
  out += R"(,"msg":")";
  append_escaped(out, msg);
  out += R"(","thread":)";
  out += std::to_string(thread);
  out += '}';
  return out;
}

void init(std::string_view level) {
  auto logger = spdlog::stderr_color_mt("vkserve");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(std::string(level)));
}

void use_json_format() { spdlog::default_logger()->set_formatter(std::make_unique<json_formatter>()); }

}  // namespace vks::log
