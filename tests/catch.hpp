// The one include for Catch2 (v2) in vkserve's tests.
// Catch's INTERNAL_CATCH_TEST (behind CHECK/REQUIRE and their _FALSE forms) names the
// assertion's expression twice more for warnings' sake: `(void)__builtin_constant_p(expr)`
// and `while ((void)0, (false) && !!(expr))`. GCC 12's coroutine lowering evaluates a
// `co_await` in both places, so `REQUIRE((co_await send_all(...)).ok())` sent its bytes
// three times. Redefine it to evaluate the expression exactly once; a macro is expanded
// where the assertion is written, so redefining it after the include is enough.
#pragma once

#include <catch2/catch.hpp>

#undef INTERNAL_CATCH_TEST
#define INTERNAL_CATCH_TEST(macroName, resultDisposition, ...)                              \
  do {                                                                                      \
    Catch::AssertionHandler catchAssertionHandler(macroName##_catch_sr,                     \
                                                  CATCH_INTERNAL_LINEINFO,                  \
                                                  CATCH_INTERNAL_STRINGIFY(__VA_ARGS__),    \
                                                  resultDisposition);                       \
    INTERNAL_CATCH_TRY {                                                                    \
      CATCH_INTERNAL_START_WARNINGS_SUPPRESSION                                             \
      CATCH_INTERNAL_SUPPRESS_PARENTHESES_WARNINGS                                          \
      catchAssertionHandler.handleExpr(Catch::Decomposer() <= __VA_ARGS__);                 \
      CATCH_INTERNAL_STOP_WARNINGS_SUPPRESSION                                              \
    }                                                                                       \
    INTERNAL_CATCH_CATCH(catchAssertionHandler)                                             \
    INTERNAL_CATCH_REACT(catchAssertionHandler)                                             \
  } while (false)
