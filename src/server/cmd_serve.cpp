// `vkserve serve`: not implemented yet (placeholder so the CLI lists it).
#include "base/log.hpp"
#include "server/commands.hpp"

namespace vks::server {

void add_serve_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("serve", "not implemented yet");
  cmd->allow_extras();
  cmd->callback([&exit_code] {
    vks::log::error("'serve' is not implemented yet");
    exit_code = 1;
  });
}

}  // namespace vks::server
