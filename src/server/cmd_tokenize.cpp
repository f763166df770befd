// `vkserve tokenize --model PATH [--add-special] [--no-parse-special] [--pieces]`: reads
// UTF-8 text on stdin and prints its token ids on one line, space-separated (a GGUF file,
// vocab-only included, or a Hugging Face tokenizer directory). --add-special adds BOS/EOS
// as the vocabulary's config says; special-token text (e.g. "<|im_end|>") is parsed
// unless --no-parse-special. --pieces prints "id:piece" pairs instead (debugging).
#include <cstdio>
#include <memory>
#include <string>

#include "base/log.hpp"
#include "server/commands.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace vks::server {

namespace {

struct tokenize_args {
  std::string model, pre;
  bool add_special = false;
  bool no_parse_special = false;
  bool pieces = false;
};

int run_tokenize(const tokenize_args& a) {
  text::load_options opt;
  opt.pre = a.pre;
  auto tok = text::tokenizer::load(a.model, opt);
  if (!tok) {
    vks::log::error("tokenize: {}", tok.error().message);
    return 1;
  }
  const std::string input = read_stdin();
  auto ids = (*tok)->encode(input, a.add_special, !a.no_parse_special);
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
    if (a.pieces) line += ":" + (*tok)->token_piece(ids[i]);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

std::string read_stdin() {
  std::string out;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) out.append(buf, n);
  return out;
}

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<tokenize_args>();
  auto* cmd = app.add_subcommand("tokenize", "print the token ids of the text on stdin");
  cmd->add_option("--model,-m", args->model, "GGUF file or Hugging Face tokenizer directory")->required();
  cmd->add_flag("--add-special", args->add_special, "add BOS/EOS as the model's tokenizer config says");
  cmd->add_flag("--no-parse-special", args->no_parse_special, "treat special-token text as plain text");
  cmd->add_flag("--pieces", args->pieces, "print id:piece pairs");
  cmd->add_option("--pre", args->pre, "pre-tokenizer preset for vocab.json/encoder.json dirs (e.g. qwen2, llama3)");
  cmd->callback([args, &exit_code] { exit_code = run_tokenize(*args); });
}

}  // namespace vks::server
