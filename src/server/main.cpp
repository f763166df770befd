// vkserve entry point: parses the command line with CLI11 and runs one subcommand.
// `vkserve` with no subcommand prints help; `vkserve serve` is the SageMaker entry.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "base/log.hpp"
#include "base/log_format.hpp"
#include "server/commands.hpp"
#include "server/socket_activation.hpp"

int main(int argc, char** argv) {
  vks::server::remember_argv(argc, argv);  // for the re-exec of --on-device-lost recover
  CLI::App app{"vkserve: OpenAI-compatible LLM inference server on Vulkan"};
  app.set_version_flag("--version", std::string("vkserve ") + VKS_VERSION);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")->capture_default_str();
  std::string log_format = "text";
  app.add_option("--log-format", log_format,
                 "text | json (one JSON object per line: ts, level, msg, thread, request_id; for journald/Loki)")
      ->check(CLI::IsMember({"text", "json"}))->envname("VKSERVE_LOG_FORMAT")->capture_default_str();
  app.require_subcommand(1);
  int exit_code = 0;
  vks::server::add_serve_command(app, exit_code);
  vks::server::add_generate_command(app, exit_code);
  vks::server::add_tokenize_command(app, exit_code);
  vks::server::add_template_command(app, exit_code);
  app.parse_complete_callback([&] {
    vks::log::init(log_level);
    if (log_format == "json") vks::log::use_json_format();
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
