// llama.cpp `tokenizer.ggml.pre` presets: llama.cpp's published vectors for the vocabularies
// committed under models/vocab (deepseek-coder, deepseek-llm, falcon, starcoder), every
// accepted name loads, and the splits of the families whose rules are not plain regex
// alternations (digit grouping, zero-width splits, Han runs) are checked piece by piece.
#include "catch.hpp"

#include "common.hpp"
#include "text/tokenizer/presets.hpp"
#include "text/tokenizer/pretokenizer.hpp"

using namespace vks::text;
using namespace vks::text::test;

namespace {

const tokenizer& repo_vocab(const std::string& name) {
  static std::vector<std::pair<std::string, std::unique_ptr<tokenizer>>> cache;
  for (auto& [k, v] : cache)
    if (k == name) return *v;
  auto t = tokenizer::load(source_path("models/vocab/ggml-vocab-" + name + ".gguf"));
  if (!t) FAIL("loading " << name << ": " << t.error().message);
  cache.emplace_back(name, std::move(*t));
  return *cache.back().second;
}

void check_repo_vectors(const std::string& name, const std::string& pre) {
  const tokenizer& tok = repo_vocab(name);
  CHECK(tok.pre() == pre);
  size_t n = 0;
  std::string fails = vector_failures(tok, source_path("models/vocab/ggml-vocab-" + name + ".gguf"), n);
  CHECK(n > 30);
  INFO(fails);
  CHECK(fails.empty());
}

// The words `text` splits into under preset `name`.
std::vector<std::string> words(const std::string& name, const std::string& text) {
  pretokenizer::preset_flags f;
  auto p = pretokenizer::preset(name, f);
  REQUIRE(p.ok());
  std::string buf;
  std::vector<word_span> ws;
  std::string_view t = p->split(text, buf, ws);
  std::vector<std::string> out;
  for (auto w : ws) out.emplace_back(t.substr(w.begin, w.end - w.begin));
  return out;
}

using strs = std::vector<std::string>;

}  // namespace

TEST_CASE("vectors: deepseek-coder (GGUF)", "[tokenizer][vectors][presets]") {
  check_repo_vectors("deepseek-coder", "deepseek-coder");
}
TEST_CASE("vectors: deepseek-llm (GGUF)", "[tokenizer][vectors][presets]") {
  check_repo_vectors("deepseek-llm", "deepseek-llm");
}
TEST_CASE("vectors: falcon (GGUF)", "[tokenizer][vectors][presets]") { check_repo_vectors("falcon", "falcon"); }
TEST_CASE("vectors: starcoder (GGUF)", "[tokenizer][vectors][presets]") {
  check_repo_vectors("starcoder", "starcoder");
}

TEST_CASE("deepseek-coder splits digits one by one (as llama.cpp)", "[tokenizer][presets]") {
  // "=" is a math symbol, not punctuation: it stays in the gap with the spaces.
  CHECK(words("deepseek-coder", "x = 3333;\n") == strs{"x", " = ", "3", "3", "3", "3", ";", "\n"});
  const tokenizer& tok = repo_vocab("deepseek-coder");
  // Each digit is its own word, so each is its own token.
  auto ids = tok.encode("3333", false, false);
  CHECK(ids.size() == 4);
}

TEST_CASE("every llama.cpp pre-tokenizer name compiles and splits", "[tokenizer][presets]") {
  const std::string sample =
      "Hello World! I'm 1234567 ok\n\n  \tcode:{x<=y}  Ünïcödé 你好世界 こんにちは 안녕 ٣٤٥ 'S  ";
  auto all = presets::names();
  CHECK(all.size() >= 90);
  for (std::string_view name : {"deepseek-llm", "deepseek-coder", "deepseek-v3", "falcon", "mpt", "starcoder",
                                "refact", "command-r", "dbrx", "smaug-bpe", "poro-chat", "chatglm-bpe", "viking",
                                "jais", "tekken", "olmo", "chameleon", "minerva-7b", "exaone", "bloom",
                                "gpt3-finnish", "seed-coder", "kimi-k2", "hunyuan", "superbpe", "trillion",
                                "bailingmoe", "gpt-4o", "default"})
    CHECK(pretokenizer::known_preset(name));
  for (std::string_view name : all) {
    INFO(name);
    pretokenizer::preset_flags f;
    auto p = pretokenizer::preset(name, f);
    REQUIRE(p.ok());
    std::string buf;
    std::vector<word_span> ws;
    std::string_view t = p->split(sample, buf, ws);
    // Isolated splits keep every byte, in order, in non-empty words.
    std::string joined;
    for (auto w : ws) {
      CHECK(w.end > w.begin);
      joined += t.substr(w.begin, w.end - w.begin);
    }
    CHECK(joined == std::string(t));
  }
  pretokenizer::preset_flags f;
  CHECK(pretokenizer::preset("no-such-pre", f).error().code == vks::errc::unsupported);
}

TEST_CASE("preset flags follow llama.cpp's loader", "[tokenizer][presets]") {
  pretokenizer::preset_flags f;
  REQUIRE(pretokenizer::preset("llama3", f).ok());
  CHECK((f.ignore_merges && f.add_bos && f.byte_encode));
  REQUIRE(pretokenizer::preset("dbrx", f).ok());
  CHECK_FALSE(f.ignore_merges);
  REQUIRE(pretokenizer::preset("tekken", f).ok());
  CHECK((f.ignore_merges && f.add_bos));
  REQUIRE(pretokenizer::preset("gemma4", f).ok());
  CHECK_FALSE(f.byte_encode);
  CHECK(words("gemma4", "a b\n\nc") == strs{"a\xE2\x96\x81" "b", "\n\n", "c"});
}

TEST_CASE("digit grouping and zero-width splits", "[tokenizer][presets]") {
  // superbpe: digit runs, then a zero-width split before every group of three from the right.
  CHECK(words("superbpe", "ab 1234567 x") == strs{"ab ", "1", "234", "567", " x"});
  // afmoe: the first (length mod 3) digits, then threes.
  CHECK(words("afmoe", "12345") == strs{"12", "345"});
  CHECK(words("afmoe", "123456") == strs{"123", "456"});
  // tiny_aya: the same grouping with \d and a word boundary.
  CHECK(words("tiny_aya", "1234") == strs{"1", "234"});
  // deepseek-v3: up to three digits, CJK runs apart from letters.
  CHECK(words("deepseek-v3", "12345你好abc") == strs{"123", "45", "你好", "abc"});
  // kimi-k2: Han runs never join Latin letters.
  CHECK(words("kimi-k2", "abc你好Def") == strs{"abc", "你好", "Def"});
  // falcon: punctuation runs first, then GPT-2 words, then three-digit groups.
  CHECK(words("falcon", "x=1234!") == strs{"x", "=", "123", "4", "!"});
  // viking: bloom's split, then every digit alone.
  CHECK(words("viking", "ab 12.") == strs{"ab", " ", "1", "2", "."});
}

namespace {

std::vector<std::string> split_with(pretokenizer& p, const std::string& text, bool first = true) {
  std::string buf;
  std::vector<word_span> ws;
  std::string_view t = p.split(text, buf, ws, first);
  std::vector<std::string> out;
  for (auto w : ws) out.emplace_back(t.substr(w.begin, w.end - w.begin));
  return out;
}

}  // namespace

// Hugging Face tokenizers' documented SplitDelimiterBehavior example: "the-final--countdown"
// split on "-".
TEST_CASE("HF Split behaviors", "[tokenizer][hf]") {
  auto with = [](split_behavior b, bool invert = false) {
    pretokenizer p;
    REQUIRE(p.add_split("-", b, invert, true).ok());
    return split_with(p, "the-final--countdown");
  };
  CHECK(with(split_behavior::removed) == strs{"the", "final", "countdown"});
  CHECK(with(split_behavior::isolated) == strs{"the", "-", "final", "-", "-", "countdown"});
  CHECK(with(split_behavior::merged_with_previous) == strs{"the-", "final-", "-", "countdown"});
  CHECK(with(split_behavior::merged_with_next) == strs{"the", "-final", "-", "-countdown"});
  CHECK(with(split_behavior::contiguous) == strs{"the", "-", "final", "--", "countdown"});
  // invert: the pattern names the words; what lies between them is the delimiter.
  pretokenizer inv;
  REQUIRE(inv.add_split(R"(\w+)", split_behavior::removed, true).ok());
  CHECK(split_with(inv, "Hey friend!  How are you?") == strs{"Hey", "friend", "How", "are", "you"});
  // A regex step applies to each piece of the step before it, and sees only that piece.
  pretokenizer seq;
  REQUIRE(seq.add_split(" ", split_behavior::removed, false, true).ok());
  REQUIRE(seq.add_split("^a", split_behavior::isolated, false).ok());
  CHECK(split_with(seq, "ab ab") == strs{"a", "b", "a", "b"});
}

TEST_CASE("HF Metaspace prepend_scheme first applies to the text's first fragment only", "[tokenizer][hf]") {
  pretokenizer p;
  p.metaspace = "\xE2\x96\x81";
  p.metaspace_prepend = true;
  p.metaspace_split = true;
  CHECK(split_with(p, "a b") == strs{"\xE2\x96\x81" "a", "\xE2\x96\x81" "b"});
  p.metaspace_first_only = true;
  CHECK(split_with(p, "a b", true) == strs{"\xE2\x96\x81" "a", "\xE2\x96\x81" "b"});
  CHECK(split_with(p, "a b", false) == strs{"a", "\xE2\x96\x81" "b"});  // after a special token
}

TEST_CASE("HF normalizers: Replace with a regex, Strip of Unicode whitespace", "[tokenizer][hf]") {
  auto tok = tokenizer::from_hf_json(R"({
    "model": {"type": "BPE", "vocab": {"a": 0, "_": 1, "b": 2, "c": 3}, "merges": []},
    "normalizer": {"type": "Sequence", "normalizers": [
      {"type": "Strip", "strip_left": true, "strip_right": true},
      {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": "_"},
      {"type": "Lowercase"}]},
    "pre_tokenizer": null, "decoder": null})");
  REQUIRE(tok.ok());
  // U+3000 and U+00A0 are whitespace to Rust's char::is_whitespace and to \s.
  CHECK((*tok)->encode("\xE3\x80\x80 A \t\xC2\xA0 B c\xE3\x80\x80", false, false) == std::vector<int32_t>{0, 1, 2, 1, 3});
}

TEST_CASE("long runs split like short ones (no regex stack limit cuts a word)", "[tokenizer][presets]") {
  const std::string letters(120000, 'a'), mixed = "Ab" + std::string(80000, 'b') + " " + std::string(40000, '7');
  for (const char* name : {"kimi-k2", "tekken", "gpt-4o", "llama3", "deepseek-llm", "granite-embed-multi-97m", "exaone-moe"}) {
    INFO(name);
    CHECK(words(name, letters).size() == 1);
    auto w = words(name, mixed);
    std::string joined;
    for (const auto& x : w) joined += x;
    CHECK(joined == mixed);
    CHECK(w.front().size() >= 80000);
  }
}
