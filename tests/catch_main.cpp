// Catch2 (v2) main, compiled once and linked into every unit-test executable. Before any
// test runs it checks the executable's preconditions (tests/precondition.hpp) against the
// tests the command line selects: one unmet skips the whole executable with exit 77.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "precondition.hpp"

namespace vks::test_main {

std::vector<precondition>& preconditions() {
  static std::vector<precondition> all;
  return all;
}

namespace {

bool selected_has_tag(Catch::Config& cfg, const std::string& tag) {
  if (tag.empty()) return true;
  for (const auto& tc : Catch::filterTests(Catch::getAllTestCasesSorted(cfg), cfg.testSpec(), cfg))
    if (std::find(tc.lcaseTags.begin(), tc.lcaseTags.end(), tag) != tc.lcaseTags.end()) return true;
  return false;
}

}  // namespace
}  // namespace vks::test_main

int main(int argc, char** argv) {
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  for (const auto& p : vks::test_main::preconditions()) {
    if (!vks::test_main::selected_has_tag(session.config(), p.tag)) continue;
    if (std::string why = p.check(); !why.empty()) {
      std::printf("SKIP: %s\n", why.c_str());
      return 77;  // meson: skipped
    }
  }
  return session.run();
}
