// Subcommands of the vkserve binary. Each add_* registers a CLI11 subcommand on `app` and
// arranges for `exit_code` to receive the command's exit status when it runs. One file per
// subcommand (cmd_<name>.cpp); main.cpp only wires them together.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace vks::server {

void add_serve_command(CLI::App& app, int& exit_code);     // HTTP server (default: demo model)
void add_generate_command(CLI::App& app, int& exit_code);  // one-shot text generation
void add_tokenize_command(CLI::App& app, int& exit_code);  // stdin text -> token ids
void add_template_command(CLI::App& app, int& exit_code);  // stdin JSON -> rendered chat prompt

// `--vk-tuning cpu|cpu:ssbo|cpu:loads|gpu|gpu:N[:smem]|<class>` (generate and serve): the kernel family
// gpu::vk_options::tuning forces, as the tests' VKS_VK_TUNING does; checked when parsed.
void add_vk_tuning_option(CLI::App& cmd, std::string& tuning);

// All of standard input, bytes as they are (tokenize and template read their input so).
std::string read_stdin();

}  // namespace vks::server
