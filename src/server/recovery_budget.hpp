// How many times --on-device-lost recover may re-execute: at most `max` recoveries within
// `window` seconds, counted across re-execs through one environment variable
// (VKSERVE_RECOVERIES: the unix times of the recent recoveries, comma-separated), so a GPU
// that keeps failing ends in an exit for the supervisor instead of a reload loop.
// Pure functions (the caller reads and sets the variable); any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vks::server {

inline constexpr const char* k_recoveries_env = "VKSERVE_RECOVERIES";

struct recovery_decision {
  bool allowed = false;  // re-execute (else exit)
  int n_recent = 0;      // recoveries within the window, this one included when allowed
  std::string env;       // the variable's new value (the window's times, plus now if allowed)
};

// `previous`: the variable as inherited ("" or malformed entries: ignored). `now`: unix
// seconds. max <= 0 never allows.
recovery_decision decide_recovery(std::string_view previous, std::int64_t now, std::int64_t window_s, int max);

}  // namespace vks::server
