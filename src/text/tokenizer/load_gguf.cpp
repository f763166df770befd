// Tokenizer from GGUF metadata (`tokenizer.ggml.*`), with llama.cpp's defaults for keys a
// file leaves out: `llama` = SentencePiece-style (bos 1, eos 2, unk 0, add_bos, space
// prefix), `gpt2` = byte-level BPE with the `tokenizer.ggml.pre` regex preset, `gemma4` =
// BPE over raw UTF-8 with the "gemma4" preset whatever the file's pre says.
#include "text/tokenizer/tokenizer_impl.hpp"

namespace vks::text {

namespace {

result<std::vector<std::string>> string_array(const vks::gguf::file& f, std::string_view key, bool required) {
  std::vector<std::string> out;
  const auto* arr = f.get_array(key);
  if (!arr) {
    if (required) return fail(errc::parse, f.path() + ": missing GGUF key " + std::string(key));
    return out;
  }
  out.reserve(arr->items.size());
  for (const auto& it : arr->items) {
    const auto* s = std::get_if<std::string>(&it);
    if (!s) return fail(errc::parse, f.path() + ": " + std::string(key) + " is not an array of strings");
    out.push_back(*s);
  }
  return out;
}

template <class T>
result<std::vector<T>> number_array(const vks::gguf::file& f, std::string_view key) {
  std::vector<T> out;
  const auto* arr = f.get_array(key);
  if (!arr) return out;
  out.reserve(arr->items.size());
  for (const auto& it : arr->items) {
    if (const auto* d = std::get_if<double>(&it)) out.push_back(static_cast<T>(*d));
    else if (const auto* i = std::get_if<int64_t>(&it)) out.push_back(static_cast<T>(*i));
    else if (const auto* u = std::get_if<uint64_t>(&it)) out.push_back(static_cast<T>(*u));
    else return fail(errc::parse, f.path() + ": " + std::string(key) + " is not a numeric array");
  }
  return out;
}

void read_ids(const vks::gguf::file& f, tokenizer::impl& t) {
  auto id = [&](const char* key, int32_t& dst) {
    if (auto v = f.get_int(key)) dst = static_cast<int32_t>(*v);
  };
  id("tokenizer.ggml.bos_token_id", t.bos_id);
  id("tokenizer.ggml.eos_token_id", t.eos_id);
  id("tokenizer.ggml.unknown_token_id", t.unk_id);
  id("tokenizer.ggml.padding_token_id", t.pad_id);
  id("tokenizer.ggml.eot_token_id", t.eot_id);
  id("tokenizer.ggml.eom_token_id", t.eom_id);
  if (auto v = f.get_bool("tokenizer.ggml.add_bos_token")) t.add_bos_flag = *v;
  if (auto v = f.get_bool("tokenizer.ggml.add_eos_token")) t.add_eos_flag = *v;
  if (auto v = f.get_bool("tokenizer.ggml.add_space_prefix")) t.add_space_prefix = *v;
}

void read_templates(const vks::gguf::file& f, tokenizer::impl& t) {
  if (auto s = f.get_string("tokenizer.chat_template")) t.chat_template = *s;
  constexpr std::string_view prefix = "tokenizer.chat_template.";
  for (const auto& [key, v] : f.metadata()) {
    if (key.size() > prefix.size() && key.compare(0, prefix.size(), prefix) == 0)
      if (const auto* s = std::get_if<std::string>(&v)) t.named_templates.emplace_back(key.substr(prefix.size()), *s);
  }
}

// BPE with merges and a `tokenizer.ggml.pre` preset: `gpt2` (the preset the file names,
// "default" when absent) or `gemma4` (always the "gemma4" preset, as llama.cpp does: BPE over
// raw UTF-8 with spaces as '▁', <0xNN> byte fallback, split at newline runs; no default
// special ids). Returns the preset's loader flags.
result<pretokenizer::preset_flags> load_bpe(const vks::gguf::file& f, tokenizer::impl& t, bool gemma4) {
  t.kind = tokenizer_kind::bpe;
  t.byte_level = true;
  t.dmode = decode_mode::byte_level;
  t.add_space_prefix = false;
  auto merges = string_array(f, "tokenizer.ggml.merges", true);
  if (!merges) return fail(std::move(merges).error());
  for (const auto& m : *merges) {
    size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) return fail(errc::parse, f.path() + ": malformed merge '" + m + "'");
    t.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }
  t.pre_name = gemma4 ? "gemma4" : f.get_string("tokenizer.ggml.pre").value_or("");
  if (t.pre_name.empty()) t.pre_name = "default";  // llama.cpp: missing -> default
  pretokenizer::preset_flags pf;
  auto pre = pretokenizer::preset(t.pre_name, pf);
  if (!pre) return fail(errc::unsupported, f.path() + ": " + pre.error().message);
  t.pre = std::move(*pre);
  t.ignore_merges = pf.ignore_merges;
  t.whole_newline_runs = pf.whole_newline_runs;
  t.add_bos_flag = pf.add_bos;  // tokenizer.ggml.add_bos_token, when present, decides
  if (!pf.byte_encode) {        // SPM-style BPE: pieces are raw UTF-8 with '▁' and <0xNN>
    t.byte_level = false;
    t.byte_fallback = true;
    t.dmode = decode_mode::metaspace;
  }
  return pf;
}

}  // namespace

result<std::unique_ptr<tokenizer::impl>> impl_from_gguf(const vks::gguf::file& f) {
  auto model = f.get_string("tokenizer.ggml.model");
  if (!model) return fail(errc::parse, f.path() + ": no tokenizer.ggml.model (not a model/vocab GGUF?)");
  auto t = std::make_unique<tokenizer::impl>();
  bool force_add_bos = false;
  auto tokens = string_array(f, "tokenizer.ggml.tokens", true);
  if (!tokens) return fail(std::move(tokens).error());
  t->pieces = std::move(*tokens);
  auto types = number_array<int32_t>(f, "tokenizer.ggml.token_type");
  if (!types) return fail(std::move(types).error());
  for (int32_t ty : *types) t->types.push_back(ty >= 1 && ty <= 6 ? static_cast<token_type>(ty) : token_type::normal);
  if (*model == "llama") {
    t->kind = tokenizer_kind::spm;
    t->byte_level = false;
    t->dmode = decode_mode::metaspace;
    t->bos_id = 1;
    t->eos_id = 2;
    t->unk_id = 0;
    t->add_bos_flag = true;
    auto scores = number_array<float>(f, "tokenizer.ggml.scores");
    if (!scores) return fail(std::move(scores).error());
    t->scores = std::move(*scores);
  } else if (*model == "gpt2" || *model == "gemma4") {
    auto pf = load_bpe(f, *t, *model == "gemma4");
    if (!pf) return fail(std::move(pf).error());
    force_add_bos = pf->force_add_bos;
  } else {
    return fail(errc::unsupported, f.path() + ": tokenizer model '" + *model +
                                       "' is not supported (supported: llama, gpt2, gemma4)");
  }
  read_ids(f, *t);
  if (force_add_bos) t->add_bos_flag = true;  // llama.cpp: Gemma 4 always adds BOS
  t->strip_first_space = t->kind == tokenizer_kind::spm && t->add_space_prefix;
  if (t->add_bos_flag && t->bos_id >= 0) t->prefix_ids = {t->bos_id};
  if (t->add_eos_flag && t->eos_id >= 0) t->suffix_ids = {t->eos_id};
  read_templates(f, *t);
  VKS_TRY(t->finalize());
  return t;
}

result<std::unique_ptr<tokenizer>> tokenizer::from_gguf(const vks::gguf::file& f) {
  auto p = impl_from_gguf(f);
  if (!p) return fail(std::move(p).error());
  return tokenizer_builder::make(std::move(*p));
}

}  // namespace vks::text
