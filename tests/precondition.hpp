// Preconditions of a unit-test executable (a device, a runtime backend, test data), checked
// by tests/catch_main.cpp after the command line is read and before Catch runs any test. An
// unmet one skips the whole executable (exit 77, Meson: skipped), so a skip never hides a
// failure reported earlier in the same run; a test never exits on its own.
#pragma once

#include <string>
#include <vector>

namespace vks::test_main {

// "" when met, else why not (printed with the skip).
using check_fn = std::string (*)();

struct precondition {
  std::string tag;  // checked only when a selected test carries [tag]; "" : always
  check_fn check;
};

// Every precondition registered in this executable (defined in tests/catch_main.cpp).
std::vector<precondition>& preconditions();

// Registers `check` at static-initialisation time; use as
//   inline const bool needs_x = vks::test_main::require("", [] { ... return std::string(); });
inline bool require(std::string tag, check_fn check) {
  preconditions().push_back({std::move(tag), check});
  return true;
}

}  // namespace vks::test_main
