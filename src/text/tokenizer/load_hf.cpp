// Tokenizers from Hugging Face files: tokenizer.json (BPE model, normalizer,
// pre-tokenizer, decoder, post-processor, added tokens) + tokenizer_config.json, the
// GPT-2-style pairs vocab.json + merges.txt and encoder.json + vocab.bpe, and load(),
// which picks the loader for a path. nlohmann exceptions are caught here and become
// errc::parse values.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/mapped_file.hpp"
#include "text/tokenizer/hf_json.hpp"
#include "text/tokenizer/tokenizer_impl.hpp"

namespace vks::text {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

result<json> parse_json_text(std::string_view text, const std::string& what) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return fail(errc::parse, what + ": invalid JSON");
  return j;
}

result<json> read_json(const fs::path& p) {
  auto text = vks::read_file(p.string());
  if (!text) return fail(std::move(text).error());
  return parse_json_text(*text, p.string());
}

// Merges file: one "a b" per line; a leading "#version" line and blank lines are skipped.
result<std::vector<std::pair<std::string, std::string>>> read_merges(const fs::path& p) {
  auto text = vks::read_file(p.string());
  if (!text) return fail(std::move(text).error());
  std::vector<std::pair<std::string, std::string>> out;
  std::string_view s = *text;
  size_t line_no = 0;
  while (!s.empty()) {
    size_t nl = s.find('\n');
    std::string_view line = s.substr(0, nl);
    s = nl == std::string_view::npos ? std::string_view() : s.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.substr(0, 9) == "#version:")) continue;
    size_t sp = line.find(' ', 1);
    if (sp == std::string_view::npos)
      return fail(errc::parse, p.string() + ":" + std::to_string(line_no) + ": malformed merge line");
    out.emplace_back(std::string(line.substr(0, sp)), std::string(line.substr(sp + 1)));
  }
  return out;
}

// Llama 3 tokenizer's 256 special tokens (ids 128000..128255), absent from encoder.json.
void add_llama3_specials(tokenizer::impl& t) {
  static const char* named[] = {"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                                "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                                "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                                "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"};
  int32_t id = 128000;
  for (const char* n : named) t.added.push_back({n, id++, true, false, false});
  for (int r = 3; id < 128256; ++r) t.added.push_back({"<|reserved_special_token_" + std::to_string(r) + "|>", id++, true, false, false});
  t.bos_id = 128000;
  t.eos_id = 128009;  // <|eot_id|> (instruct models); <|end_of_text|> is end-of-generation too
  t.eot_id = 128009;
  t.add_bos_flag = true;
  t.prefix_ids = {128000};
}

}  // namespace

result<std::unique_ptr<tokenizer::impl>> impl_from_bpe_files(const std::string& vocab_path,
                                                             const std::string& merges_path,
                                                             const load_options& opt, const std::string& dir) {
  auto vocab = read_json(vocab_path);
  if (!vocab) return fail(std::move(vocab).error());
  auto merges = read_merges(merges_path);
  if (!merges) return fail(std::move(merges).error());
  auto t = std::make_unique<tokenizer::impl>();
  t->kind = tokenizer_kind::bpe;
  t->byte_level = true;
  t->dmode = decode_mode::byte_level;
  t->add_space_prefix = false;
  VKS_TRY(hf_fill_vocab(*t, *vocab, vocab_path));
  t->merges = std::move(*merges);
  std::string cfg_text;
  fs::path cfg = opt.config_path.empty() ? fs::path(dir) / "tokenizer_config.json" : fs::path(opt.config_path);
  if (is_file(cfg)) {
    auto text = vks::read_file(cfg.string());
    if (!text) return fail(std::move(text).error());
    cfg_text = std::move(*text);
  }
  std::string pre = opt.pre;
  if (pre.empty()) {
    bool qwen = cfg_text.find("Qwen2Tokenizer") != std::string::npos || t->pieces.size() == 151643;
    pre = qwen ? "qwen2" : t->pieces.size() == 128000 ? "llama3" : "gpt-2";
  }
  if (pre == "llama3" && t->pieces.size() == 128000 && cfg_text.empty()) add_llama3_specials(*t);
  if (pre == "qwen2") t->norm.add({normalizer::op::nfc, {}, {}, true, true});  // Qwen2Tokenizer does NFC
  t->pre_name = pre;
  pretokenizer::preset_flags pf;
  auto p = pretokenizer::preset(pre, pf);
  t->ignore_merges = pf.ignore_merges;
  if (!p) return fail(std::move(p).error());
  t->pre = std::move(*p);
  if (!cfg_text.empty()) VKS_TRY(apply_tokenizer_config(*t, cfg_text));
  if (fs::path tpl = fs::path(dir) / "chat_template.jinja"; is_file(tpl)) {
    auto text = vks::read_file(tpl.string());
    if (text) t->chat_template = std::move(*text);
  }
  VKS_TRY(t->finalize());
  return t;
}

result<std::unique_ptr<tokenizer>> tokenizer::from_hf_json(std::string_view tokenizer_json, std::string_view config_json) {
  auto p = impl_from_hf_json(tokenizer_json, config_json, {});
  if (!p) return fail(std::move(p).error());
  return tokenizer_builder::make(std::move(*p));
}

result<std::unique_ptr<tokenizer>> tokenizer::from_hf_dir(const std::string& dir, const load_options& opt) {
  fs::path d(dir);
  std::error_code ec;
  if (!fs::is_directory(d, ec)) return fail(errc::not_found, dir + ": not a directory");
  result<std::unique_ptr<impl>> p = fail(errc::internal, "unset");
  if (is_file(d / "tokenizer.json")) {
    auto tok = vks::read_file((d / "tokenizer.json").string());
    if (!tok) return fail(std::move(tok).error());
    std::string cfg;
    fs::path cfg_path = opt.config_path.empty() ? d / "tokenizer_config.json" : fs::path(opt.config_path);
    if (is_file(cfg_path)) {
      auto c = vks::read_file(cfg_path.string());
      if (!c) return fail(std::move(c).error());
      cfg = std::move(*c);
    }
    p = impl_from_hf_json(*tok, cfg, dir);
  } else if (is_file(d / "vocab.json") && is_file(d / "merges.txt")) {
    p = impl_from_bpe_files((d / "vocab.json").string(), (d / "merges.txt").string(), opt, dir);
  } else if (is_file(d / "encoder.json") && is_file(d / "vocab.bpe")) {
    p = impl_from_bpe_files((d / "encoder.json").string(), (d / "vocab.bpe").string(), opt, dir);
  } else {
    return fail(errc::not_found, dir + ": no tokenizer.json, vocab.json+merges.txt or encoder.json+vocab.bpe");
  }
  if (!p) return fail(std::move(p).error());
  return tokenizer_builder::make(std::move(*p));
}

result<std::unique_ptr<tokenizer>> tokenizer::load(const std::string& path, const load_options& opt) {
  fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) return from_hf_dir(path, opt);
  if (!fs::exists(p, ec)) return fail(errc::not_found, path + ": no such file or directory");
  if (p.filename() == "tokenizer.json") return from_hf_dir(p.parent_path().string(), opt);
  auto f = vks::gguf::file::open(path);
  if (!f) return fail(f.error().code, path + ": " + f.error().message);
  return from_gguf(*f);
}

}  // namespace vks::text
