// Names of error codes and the assertion handler.
#include <cstdio>
#include <cstdlib>

#include "base/assert.hpp"
#include "base/error.hpp"

namespace vks {

std::string_view to_string(errc c) noexcept {
  switch (c) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::not_found: return "not_found";
    case errc::unsupported: return "unsupported";
    case errc::parse: return "parse";
    case errc::io: return "io";
    case errc::out_of_memory: return "out_of_memory";
    case errc::context_overflow: return "context_overflow";
    case errc::overloaded: return "overloaded";
    case errc::shutting_down: return "shutting_down";
    case errc::cancelled: return "cancelled";
    case errc::timeout: return "timeout";
    case errc::device_lost: return "device_lost";
    case errc::internal: return "internal";
  }
  return "unknown";
}

namespace detail {
void assert_fail(const char* expr, const char* msg, const char* file, int line) noexcept {
  std::fprintf(stderr, "%s:%d: assertion failed: %s (%s)\n", file, line, expr, msg);
  std::fflush(stderr);
  std::abort();
}
}  // namespace detail

}  // namespace vks
