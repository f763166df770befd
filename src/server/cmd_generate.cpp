// `vkserve generate`: not implemented yet (placeholder so the CLI lists it).
#include "base/log.hpp"
#include "server/commands.hpp"

namespace vks::server {

void add_generate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("generate", "not implemented yet");
  cmd->allow_extras();
  cmd->callback([&exit_code] {
    vks::log::error("'generate' is not implemented yet");
    exit_code = 1;
  });
}

}  // namespace vks::server
