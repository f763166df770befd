// Broken invariants: VKS_ASSERT(cond, msg) aborts with file:line in every build type.
// Expected failures are never asserted; they are returned as vks::result (result.hpp).
#pragma once

namespace vks::detail {
[[noreturn]] void assert_fail(const char* expr, const char* msg, const char* file, int line) noexcept;
}

#define VKS_ASSERT(cond, msg)                                              \
  do {                                                                     \
    if (!(cond)) [[unlikely]]                                              \
      ::vks::detail::assert_fail(#cond, (msg), __FILE__, __LINE__);        \
  } while (0)

#define VKS_UNREACHABLE(msg) ::vks::detail::assert_fail("unreachable", (msg), __FILE__, __LINE__)
