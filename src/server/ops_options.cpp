// Command-line options of ops_options (see ops_options.hpp).
#include "server/ops_options.hpp"

namespace vks::server {

void add_ops_options(CLI::App& cmd, ops_options& o) {
  cmd.add_option("--otlp-traces-endpoint", o.otlp_traces_endpoint,
                 "export OpenTelemetry traces (OTLP/HTTP JSON: one span per request, child spans for prepare, "
                 "queue, prefill and decode) to this collector URL, http://HOST[:PORT][/PATH] (path default "
                 "/v1/traces; env OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)")
      ->envname("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  cmd.add_option("--max-device-recoveries", o.max_device_recoveries,
                 "--on-device-lost recover: at most this many re-execs within --device-recovery-window; one more "
                 "device loss then exits with status 75 (0 = never recover)")
      ->check(CLI::Range(0, 1000))->capture_default_str();
  cmd.add_option("--device-recovery-window", o.device_recovery_window_s,
                 "seconds over which --max-device-recoveries counts")
      ->check(CLI::Range(1.0, 1e7))->capture_default_str();
}

}  // namespace vks::server
