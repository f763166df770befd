// `vkserve serve` options of the operations features that only the serve command's main
// thread reads (docs/deploying.md): OTLP trace export and the device-loss recovery budget.
// Kept apart from serve_options (which every handler sees through the service).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace vks::server {

struct ops_options {
  std::string otlp_traces_endpoint;        // "" = no tracing; else http://HOST[:PORT][/PATH] (otlp.hpp)
  int max_device_recoveries = 3;           // --on-device-lost recover: re-execs within the window, then exit 75
  double device_recovery_window_s = 600.0;
};

void add_ops_options(CLI::App& cmd, ops_options& o);

}  // namespace vks::server
