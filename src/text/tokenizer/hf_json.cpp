// tokenizer.json (model, normalizer, pre_tokenizer, decoder, post_processor, added_tokens)
// and tokenizer_config.json readers. Supported: model BPE (byte-level or with byte
// fallback); normalizers NFC/NFD/NFKC/NFKD, Prepend, Replace (string or regex), Lowercase, Strip,
// Sequence; pre-tokenizers Split, ByteLevel, Digits, Metaspace, Whitespace,
// WhitespaceSplit, Punctuation, Sequence; post-processors TemplateProcessing, Roberta/Bert,
// ByteLevel, Sequence. Anything else is errc::unsupported, never silently wrong.
#include "text/tokenizer/hf_json.hpp"

#include <filesystem>

#include "base/mapped_file.hpp"

namespace vks::text {

using nlohmann::json;

namespace {

std::string token_name(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

int32_t lookup(const tokenizer::impl& t, const std::string& name) {
  if (name.empty()) return -1;
  for (const auto& a : t.added)
    if (a.text == name) return a.id;
  for (size_t i = 0; i < t.pieces.size(); ++i)
    if (t.pieces[i] == name) return static_cast<int32_t>(i);
  return -1;
}

std::string pattern_of(const json& p, bool& literal) {
  if (p.contains("Regex")) { literal = false; return p["Regex"].get<std::string>(); }
  literal = true;
  return p.at("String").get<std::string>();
}

split_behavior behavior_of(const std::string& b) {
  if (b == "Removed") return split_behavior::removed;
  if (b == "MergedWithPrevious") return split_behavior::merged_with_previous;
  if (b == "MergedWithNext") return split_behavior::merged_with_next;
  if (b == "Contiguous") return split_behavior::contiguous;
  return split_behavior::isolated;
}

result<void> add_normalizer(tokenizer::impl& t, const json& n) {
  if (n.is_null()) return ok();
  const std::string type = n.at("type").get<std::string>();
  using op = normalizer::op;
  if (type == "Sequence") {
    for (const auto& s : n.at("normalizers")) VKS_TRY(add_normalizer(t, s));
  } else if (type == "NFC") { t.norm.add({op::nfc, {}, {}, true, true});
  } else if (type == "NFD") { t.norm.add({op::nfd, {}, {}, true, true});
  } else if (type == "NFKC") { t.norm.add({op::nfkc, {}, {}, true, true});
  } else if (type == "NFKD") { t.norm.add({op::nfkd, {}, {}, true, true});
  } else if (type == "Lowercase") { t.norm.add({op::lowercase, {}, {}, true, true});
  } else if (type == "Prepend") { t.norm.add({op::prepend, n.at("prepend").get<std::string>(), {}, true, true});
  } else if (type == "Strip") {
    t.norm.add({op::strip, {}, {}, n.value("strip_left", true), n.value("strip_right", true)});
  } else if (type == "Replace") {
    bool literal = true;
    std::string pat = pattern_of(n.at("pattern"), literal);
    normalizer::step st{op::replace, pat, n.at("content").get<std::string>(), true, true, nullptr};
    if (!literal) {
      auto re = compile_regex(pat);
      if (!re) return fail(std::move(re).error());
      st.re = std::move(*re);
    }
    t.norm.add(std::move(st));
  } else {
    return fail(errc::unsupported, "tokenizer.json: normalizer '" + type + "' is not supported");
  }
  return ok();
}

result<void> add_pretokenizer(tokenizer::impl& t, const json& p) {
  if (p.is_null()) return ok();
  const std::string type = p.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const auto& s : p.at("pretokenizers")) VKS_TRY(add_pretokenizer(t, s));
  } else if (type == "Split") {
    bool literal = false;
    std::string pat = pattern_of(p.at("pattern"), literal);
    VKS_TRY(t.pre.add_split(pat, behavior_of(p.value("behavior", std::string("Isolated"))), p.value("invert", false), literal));
  } else if (type == "ByteLevel") {
    t.byte_level = true;
    if (p.value("add_prefix_space", false)) t.pre.prefix_space = true;
    if (p.value("use_regex", true)) VKS_TRY(t.pre.add_gpt2_split());
  } else if (type == "Digits") {
    VKS_TRY(t.pre.add_split(p.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)", split_behavior::isolated, false));
  } else if (type == "Whitespace") {
    VKS_TRY(t.pre.add_split(R"(\w+|[^\w\s]+)", split_behavior::removed, true));
  } else if (type == "WhitespaceSplit") {
    VKS_TRY(t.pre.add_split(R"(\s+)", split_behavior::removed, false));
  } else if (type == "Punctuation") {
    VKS_TRY(t.pre.add_split(R"(\p{P})", behavior_of(p.value("behavior", std::string("Isolated"))), false));
  } else if (type == "Metaspace") {
    t.pre.metaspace = p.value("replacement", std::string("\xE2\x96\x81"));
    std::string scheme = p.value("prepend_scheme", std::string(p.value("add_prefix_space", true) ? "always" : "never"));
    t.pre.metaspace_prepend = scheme != "never";
    t.pre.metaspace_first_only = scheme == "first";
    t.pre.metaspace_split = p.value("split", true);
  } else {
    return fail(errc::unsupported, "tokenizer.json: pre-tokenizer '" + type + "' is not supported");
  }
  return ok();
}

void read_decoder(tokenizer::impl& t, const json& d) {
  if (d.is_null()) return;
  const std::string type = d.value("type", std::string());
  if (type == "ByteLevel") {
    t.dmode = decode_mode::byte_level;
  } else if (type == "Metaspace") {
    t.dmode = decode_mode::metaspace;
    t.strip_first_space = d.value("prepend_scheme", std::string("always")) != "never" && d.value("add_prefix_space", true);
  } else if (type == "Sequence") {
    for (const auto& s : d.at("decoders")) {
      std::string st = s.value("type", std::string());
      if (st == "Replace" || st == "ByteFallback" || st == "Metaspace") t.dmode = decode_mode::metaspace;
      if (st == "Strip" && s.value("start", 0) > 0) t.strip_first_space = true;
      if (st == "ByteLevel") t.dmode = decode_mode::byte_level;
    }
  }
}

// Post-processor: ids added around a single sequence when add_special is set.
void read_post_processor(tokenizer::impl& t, const json& pp) {
  if (pp.is_null()) return;
  const std::string type = pp.value("type", std::string());
  if (type == "Sequence") {
    for (const auto& s : pp.at("processors")) read_post_processor(t, s);
  } else if (type == "TemplateProcessing") {
    bool after = false;
    for (const auto& piece : pp.at("single")) {
      if (piece.contains("Sequence")) { after = true; continue; }
      if (!piece.contains("SpecialToken")) continue;
      std::string name = piece["SpecialToken"].at("id").get<std::string>();
      std::vector<int32_t> ids;
      if (pp.contains("special_tokens") && pp["special_tokens"].contains(name))
        for (const auto& i : pp["special_tokens"][name].at("ids")) ids.push_back(i.get<int32_t>());
      else if (int32_t id = lookup(t, name); id >= 0) ids.push_back(id);
      auto& dst = after ? t.suffix_ids : t.prefix_ids;
      dst.insert(dst.end(), ids.begin(), ids.end());
    }
    // tokenizer.json has no bos/eos fields: a leading special token of the template is the
    // BOS it adds (tokenizer_config.json, applied later, may name another one).
    if (!t.prefix_ids.empty() && t.bos_id < 0) t.bos_id = t.prefix_ids.front();
    if (!t.suffix_ids.empty() && t.eos_id < 0) t.eos_id = t.suffix_ids.back();
    t.add_bos_flag = t.add_bos_flag || (t.bos_id >= 0 && !t.prefix_ids.empty() && t.prefix_ids.front() == t.bos_id);
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    t.prefix_ids = {pp.at("cls").at(1).get<int32_t>()};
    t.suffix_ids = {pp.at("sep").at(1).get<int32_t>()};
  }
}

result<void> read_model(tokenizer::impl& t, const json& m) {
  const std::string type = m.value("type", std::string("BPE"));
  if (type != "BPE") return fail(errc::unsupported, "tokenizer.json: model type '" + type + "' is not supported (BPE only)");
  if (!m.value("continuing_subword_prefix", json()).is_null() || !m.value("end_of_word_suffix", json()).is_null())
    return fail(errc::unsupported, "tokenizer.json: BPE continuing_subword_prefix/end_of_word_suffix");
  VKS_TRY(hf_fill_vocab(t, m.at("vocab"), "tokenizer.json"));
  for (const auto& mg : m.at("merges")) {
    if (mg.is_array()) {
      t.merges.emplace_back(mg.at(0).get<std::string>(), mg.at(1).get<std::string>());
    } else {
      std::string s = mg.get<std::string>();
      size_t sp = s.find(' ', 1);
      if (sp == std::string::npos) return fail(errc::parse, "tokenizer.json: malformed merge '" + s + "'");
      t.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    }
  }
  t.byte_fallback = m.value("byte_fallback", false);
  t.ignore_merges = m.value("ignore_merges", false);
  std::string unk = m.value("unk_token", json()).is_string() ? m["unk_token"].get<std::string>() : std::string();
  if (!unk.empty()) t.unk_id = lookup(t, unk);
  return ok();
}

result<std::unique_ptr<tokenizer::impl>> from_hf_json_unsafe(std::string_view tok_json, std::string_view cfg_json,
                                                             const std::string& dir) {
  json j = json::parse(tok_json.begin(), tok_json.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail(errc::parse, "tokenizer.json: invalid JSON");
  auto t = std::make_unique<tokenizer::impl>();
  t->kind = tokenizer_kind::bpe;
  t->byte_level = false;
  t->add_space_prefix = false;
  t->dmode = decode_mode::metaspace;
  if (!j.contains("model")) return fail(errc::parse, "tokenizer.json: no 'model'");
  VKS_TRY(read_model(*t, j["model"]));
  for (const auto& a : j.value("added_tokens", json::array()))
    t->added.push_back({a.at("content").get<std::string>(), a.at("id").get<int32_t>(), a.value("special", false),
                        a.value("lstrip", false), a.value("rstrip", false)});
  VKS_TRY(add_normalizer(*t, j.value("normalizer", json())));
  VKS_TRY(add_pretokenizer(*t, j.value("pre_tokenizer", json())));
  if (t->byte_level) t->dmode = decode_mode::byte_level;
  read_decoder(*t, j.value("decoder", json()));
  read_post_processor(*t, j.value("post_processor", json()));
  t->pre_name = t->byte_level ? "hf" : "";
  if (!cfg_json.empty()) VKS_TRY(apply_tokenizer_config(*t, cfg_json));
  if (!dir.empty()) {
    auto tpl = std::filesystem::path(dir) / "chat_template.jinja";
    std::error_code ec;
    if (std::filesystem::is_regular_file(tpl, ec))
      if (auto text = vks::read_file(tpl.string())) t->chat_template = std::move(*text);
  }
  VKS_TRY(t->finalize());
  return t;
}

}  // namespace

result<void> hf_fill_vocab(tokenizer::impl& t, const json& vocab, const std::string& what) {
  if (!vocab.is_object()) return fail(errc::parse, what + ": vocab is not an object");
  size_t n = vocab.size();
  t.pieces.assign(n, {});
  std::vector<uint8_t> seen(n, 0);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer()) return fail(errc::parse, what + ": vocab id is not an integer");
    auto id = it.value().get<int64_t>();
    if (id < 0 || id > (1 << 24)) return fail(errc::parse, what + ": vocab id out of range");
    if (static_cast<size_t>(id) >= t.pieces.size()) {
      t.pieces.resize(static_cast<size_t>(id) + 1);
      seen.resize(t.pieces.size(), 0);
    }
    t.pieces[static_cast<size_t>(id)] = it.key();
    seen[static_cast<size_t>(id)] = 1;
  }
  t.types.assign(t.pieces.size(), token_type::normal);
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) t.types[i] = token_type::unused;
  return ok();
}

result<void> apply_tokenizer_config(tokenizer::impl& t, std::string_view cfg_json) {
  try {
    json c = json::parse(cfg_json.begin(), cfg_json.end(), nullptr, false);
    if (c.is_discarded() || !c.is_object()) return fail(errc::parse, "tokenizer_config.json: invalid JSON");
    if (c.contains("added_tokens_decoder") && c["added_tokens_decoder"].is_object()) {
      for (auto it = c["added_tokens_decoder"].begin(); it != c["added_tokens_decoder"].end(); ++it) {
        int32_t id = std::stoi(it.key());
        const json& a = it.value();
        bool dup = false;
        for (const auto& e : t.added) dup = dup || e.id == id;
        if (!dup)
          t.added.push_back({a.at("content").get<std::string>(), id, a.value("special", false), a.value("lstrip", false),
                             a.value("rstrip", false)});
      }
    }
    auto set = [&](const char* key, int32_t& dst) {
      if (c.contains(key)) {
        if (c[key].is_null()) dst = -1;
        else if (int32_t id = lookup(t, token_name(c[key])); id >= 0) dst = id;
      }
    };
    set("bos_token", t.bos_id);
    set("eos_token", t.eos_id);
    set("unk_token", t.unk_id);
    set("pad_token", t.pad_id);
    if (c.contains("add_bos_token") && c["add_bos_token"].is_boolean()) {
      t.add_bos_flag = c["add_bos_token"].get<bool>();
      std::erase(t.prefix_ids, t.bos_id);
      if (t.add_bos_flag && t.bos_id >= 0) t.prefix_ids.insert(t.prefix_ids.begin(), t.bos_id);
    }
    if (c.contains("add_eos_token") && c["add_eos_token"].is_boolean()) {
      t.add_eos_flag = c["add_eos_token"].get<bool>();
      std::erase(t.suffix_ids, t.eos_id);
      if (t.add_eos_flag && t.eos_id >= 0) t.suffix_ids.push_back(t.eos_id);
    }
    if (c.contains("chat_template")) {
      const json& ct = c["chat_template"];
      if (ct.is_string()) {
        t.chat_template = ct.get<std::string>();
      } else if (ct.is_array()) {
        for (const auto& e : ct) {
          std::string name = e.at("name").get<std::string>(), tpl = e.at("template").get<std::string>();
          if (name == "default") t.chat_template = tpl;
          t.named_templates.emplace_back(name, tpl);
        }
      }
    }
  } catch (const std::exception& e) {
    return fail(errc::parse, std::string("tokenizer_config.json: ") + e.what());
  }
  return ok();
}

result<std::unique_ptr<tokenizer::impl>> impl_from_hf_json(std::string_view tok_json, std::string_view cfg_json,
                                                           const std::string& dir) {
  try {
    return from_hf_json_unsafe(tok_json, cfg_json, dir);
  } catch (const std::exception& e) {
    return fail(errc::parse, std::string("tokenizer.json: ") + e.what());
  }
}

}  // namespace vks::text
