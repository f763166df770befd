// Loaders: hand-made Hugging Face tokenizer.json files (byte-level BPE and a
// SentencePiece-like BPE with byte fallback), GGUF metadata, and clear errors for broken
// or missing files.
#include "catch.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/gguf.hpp"
#include "common.hpp"
#include "text/tokenizer/tokenizer_impl.hpp"

using namespace vks::text;
using namespace vks::text::test;
using nlohmann::json;

namespace {

std::string byte_level_json() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_encode(std::string(1, static_cast<char>(b)))] = b;
  const char* merged[] = {"he", "ll", "hell", "hello", "\xC4\xA0hello"};  // "Ġhello"
  for (int i = 0; i < 5; ++i) vocab[merged[i]] = 256 + i;
  vocab["<|end|>"] = 261;
  json j = {
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", 261}, {"content", "<|end|>"}, {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab},
                 {"merges", json::array({"h e", "l l", "he ll", json::array({"hell", "o"}), "\xC4\xA0 hello"})}}},
  };
  return j.dump();
}

std::string metaspace_json() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  const char* rest[] = {"\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "ab", "\xE2\x96\x81" "ab"};
  for (int i = 0; i < 6; ++i) vocab[rest[i]] = 259 + i;
  json added = json::array();
  for (int i = 0; i < 3; ++i)
    added.push_back({{"id", i}, {"content", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>"}, {"special", true}});
  json j = {
      {"added_tokens", added},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", json::array({
          {{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}})}}},
      {"pre_tokenizer", nullptr},
      {"post_processor", {{"type", "TemplateProcessing"},
                          {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                  {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                          {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder", {{"type", "Sequence"}, {"decoders", json::array({
          {{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
          {{"type", "ByteFallback"}}, {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"byte_fallback", true}, {"unk_token", "<unk>"},
                 {"merges", json::array({"\xE2\x96\x81 a", "a b", "\xE2\x96\x81" "a b"})}}},
  };
  return j.dump();
}

std::string temp_file(const std::string& name, const std::string& content) {
  auto p = std::filesystem::temp_directory_path() / ("vks_tok_test_" + name);
  std::ofstream(p, std::ios::binary) << content;
  return p.string();
}

// A minimal GGUF v3 with string metadata only.
std::string tiny_gguf(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string s = "GGUF";
  auto u32 = [&](uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [&](uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); };
  auto str = [&](const std::string& x) { u64(x.size()); s += x; };
  u32(3);
  u64(0);
  u64(kv.size());
  for (const auto& [k, v] : kv) {
    str(k);
    u32(8);
    str(v);
  }
  return s;
}

}  // namespace

TEST_CASE("tokenizer.json: byte-level BPE with merges, added tokens", "[tokenizer][loading]") {
  auto t = tokenizer::from_hf_json(byte_level_json());
  REQUIRE(t.ok());
  const auto& tok = **t;
  CHECK(tok.encode("hello hello", false) == std::vector<int32_t>{259, 260});
  CHECK(tok.encode("hellx", false) == std::vector<int32_t>{258, 'x'});
  CHECK(tok.encode("hello<|end|>", false, true) == std::vector<int32_t>{259, 261});
  CHECK(tok.encode("hello<|end|>", false, false).size() > 2);
  CHECK(tok.decode(std::vector<int32_t>{259, 260, 261}, true) == "hello hello");
  CHECK(tok.decode(std::vector<int32_t>{259, 260, 261}, false) == "hello hello<|end|>");
  CHECK(tok.is_special(261));
  CHECK(tok.bos() == -1);
}

TEST_CASE("tokenizer.json: SentencePiece-like BPE with byte fallback and BOS template", "[tokenizer][loading]") {
  auto t = tokenizer::from_hf_json(metaspace_json());
  REQUIRE(t.ok());
  const auto& tok = **t;
  CHECK(tok.encode("ab ab", false) == std::vector<int32_t>{264, 264});
  CHECK(tok.encode("ab ab", true) == std::vector<int32_t>{1, 264, 264});
  CHECK(tok.encode("ac", false) == std::vector<int32_t>{262, 3 + 'c'});
  CHECK(tok.decode(std::vector<int32_t>{1, 264, 264}, true) == "ab ab");
  CHECK(tok.decode(std::vector<int32_t>{262, 3 + 'c'}, true) == "ac");
  CHECK(tok.add_bos());
}

TEST_CASE("loader errors are values with clear messages", "[tokenizer][loading]") {
  auto missing = tokenizer::load("/nonexistent/tokenizer/path");
  REQUIRE(!missing.ok());
  CHECK(missing.error().code == vks::errc::not_found);

  auto bad_json = tokenizer::from_hf_json("{not json");
  REQUIRE(!bad_json.ok());
  CHECK(bad_json.error().code == vks::errc::parse);

  auto wordpiece = tokenizer::from_hf_json(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})");
  REQUIRE(!wordpiece.ok());
  CHECK(wordpiece.error().code == vks::errc::unsupported);
  CHECK(wordpiece.error().message.find("WordPiece") != std::string::npos);

  auto wrong_types = tokenizer::from_hf_json(R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})");
  REQUIRE(!wrong_types.ok());
  CHECK(wrong_types.error().code == vks::errc::parse);

  auto no_model = tokenizer::from_hf_json(R"({"added_tokens": []})");
  REQUIRE(!no_model.ok());

  auto bad_regex = tokenizer::from_hf_json(
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
          "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"}})");
  REQUIRE(!bad_regex.ok());
  CHECK(bad_regex.error().message.find("regex") != std::string::npos);

  auto empty_dir = std::filesystem::temp_directory_path() / "vks_tok_test_empty_dir";
  std::filesystem::create_directories(empty_dir);
  auto none = tokenizer::load(empty_dir.string());
  REQUIRE(!none.ok());
  CHECK(none.error().code == vks::errc::not_found);
}

TEST_CASE("GGUF loader errors: truncated file, no tokenizer, unsupported model", "[tokenizer][loading]") {
  std::string real = slurp(shared_path("models/vocab/ggml-vocab-llama-spm.gguf"));
  auto trunc = tokenizer::load(temp_file("trunc.gguf", real.substr(0, 5000)));
  CHECK(!trunc.ok());
  auto garbage = tokenizer::load(temp_file("garbage.gguf", "this is not a gguf file at all"));
  CHECK(!garbage.ok());
  auto no_tok = tokenizer::load(temp_file("notok.gguf", tiny_gguf({{"general.architecture", "llama"}})));
  REQUIRE(!no_tok.ok());
  CHECK(no_tok.error().message.find("tokenizer.ggml.model") != std::string::npos);
  auto bert = tokenizer::load(temp_file("bert.gguf", tiny_gguf({{"tokenizer.ggml.model", "bert"}})));
  REQUIRE(!bert.ok());
  auto no_tokens = tokenizer::load(temp_file("notokens.gguf", tiny_gguf({{"tokenizer.ggml.model", "llama"}})));
  REQUIRE(!no_tokens.ok());
  CHECK(no_tokens.error().message.find("tokenizer.ggml.tokens") != std::string::npos);
}

TEST_CASE("GGUF: the tokenizer of a model file (stories260K)", "[tokenizer][loading]") {
  auto f = vks::gguf::file::open(shared_path("models/stories260K/stories260K.gguf"));
  REQUIRE(f.ok());
  auto t = tokenizer::from_gguf(*f);
  REQUIRE(t.ok());
  CHECK((*t)->n_vocab() == 512);
  auto ids = (*t)->encode("Once upon a time", true);
  CHECK(ids.front() == 1);
  CHECK((*t)->decode(ids) == "Once upon a time");
}
