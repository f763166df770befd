// `vkserve template`: renders a chat template for a JSON request read from stdin
// ({"messages": [...], "tools": [...], "add_generation_prompt": true, ...kwargs}) and
// writes the prompt to stdout exactly (no trailing newline added). Exit 1 on any error.
#include <cstdio>
#include <memory>
#include <string>

#include "api/json_parse.hpp"
#include "base/log.hpp"
#include "server/commands.hpp"
#include "text/jinja/chat_template.hpp"
#include "text/jinja/template_source.hpp"

namespace vks::server {

namespace {

struct template_options {
  std::string path;
  std::string name;
  std::string bos;
  std::string eos;
};

int run_template(const template_options& o) {
  auto source = text::jinja::load_template_source(o.path, o.name);
  if (!source) {
    log::error("template: {}", source.error().message);
    return 1;
  }
  auto tmpl = text::jinja::chat_template::parse(std::move(*source));
  if (!tmpl) {
    log::error("template: {}", tmpl.error().message);
    return 1;
  }
  const std::string input = read_stdin();
  auto parsed = api::parse_json(input);
  if (!parsed) {
    log::error("template: stdin is not valid JSON: {}", parsed.error().message);
    return 1;
  }
  const api::json& request = *parsed;
  auto inputs = text::jinja::inputs_from_request(request);
  if (!inputs) {
    log::error("template: {}", inputs.error().message);
    return 1;
  }
  if (!o.bos.empty() || inputs->bos_token.empty()) inputs->bos_token = o.bos;
  if (!o.eos.empty() || inputs->eos_token.empty()) inputs->eos_token = o.eos;
  auto out = tmpl->render(text::jinja::build_context(*inputs));
  if (!out) {
    log::error("template: {}", out.error().message);
    return 1;
  }
  std::fwrite(out->data(), 1, out->size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_template_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("template", "render a chat template for a JSON request on stdin");
  auto opts = std::make_shared<template_options>();
  cmd->add_option("--template", opts->path,
                  "template: .jinja file, tokenizer_config.json, .gguf, or a model directory")->required();
  cmd->add_option("--name", opts->name, "named template (tokenizer_config list / GGUF tokenizer.chat_template.NAME)");
  cmd->add_option("--bos", opts->bos, "bos_token value");
  cmd->add_option("--eos", opts->eos, "eos_token value");
  cmd->callback([opts, &exit_code] { exit_code = run_template(*opts); });
}

}  // namespace vks::server
