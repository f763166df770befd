// Round-trips: decode(encode(text)) == text on War and Peace with every tokenizer (a
// 256 KiB slice in unoptimised or sanitizer builds to keep the suite fast; the full text in
// optimised builds and in tools/bench-tokenize), plus short multilingual strings.
#include "catch.hpp"

#include "base/utf8.hpp"
#include "common.hpp"

using namespace vks::text;
using namespace vks::text::test;

namespace {

const char* const k_all[] = {
    "models/vocab/ggml-vocab-llama-spm.gguf", "models/vocab/ggml-vocab-phi-3.gguf",
    "models/vocab/ggml-vocab-gpt-2.gguf",     "models/tokenizers/qwen2.5-qwen3-bpe",
    "models/tokenizers/llama3.2-bpe",         "models/tokenizers/smollm2-135m-instruct",
};

std::string corpus() {
  std::string text = slurp(shared_path("models/corpora/war-and-peace.txt"));
#if !defined(__OPTIMIZE__) || defined(__SANITIZE_ADDRESS__)
  size_t cut = text.find('\n', 256 * 1024);
  if (cut != std::string::npos) text.resize(cut + 1);
#endif
  return text;
}

}  // namespace

TEST_CASE("round-trip: War and Peace with every tokenizer", "[tokenizer][roundtrip]") {
  const std::string text = corpus();
  REQUIRE(text.size() > 100000);
  for (const char* path : k_all) {
    const auto& tok = get(path);
    auto ids = tok.encode(text, false, false);
    INFO(path << ": " << ids.size() << " tokens");
    CHECK(ids.size() > text.size() / 8);
    CHECK(ids.size() < text.size() / 2);
    std::string back = tok.decode(ids, true);
    if (back != text) {
      size_t i = 0;
      while (i < back.size() && i < text.size() && back[i] == text[i]) ++i;
      FAIL_CHECK("first difference at byte " << i << ": [" << text.substr(i > 20 ? i - 20 : 0, 60) << "] vs ["
                                             << back.substr(i > 20 ? i - 20 : 0, 60) << "]");
    }
  }
}

TEST_CASE("round-trip: multilingual, emoji, whitespace and byte-fallback text", "[tokenizer][roundtrip]") {
  const char* const texts[] = {
      "Hello world", " leading space", "  two leading", "trailing  ", "\n\nnewlines\n", "tab\there",
      "Grüße, café! naïve façade", "日本語のテキストと한국어", "emoji 🦙🚀 and ZWJ 👨‍👩‍👧",
      "mixed 123456789 numbers 3.14159", "Ελληνικά и русский", "\xF0\x9F\x98\x81\xF0\x9F\x98\x81",
      "a", " ", "",
  };
  for (const char* path : k_all) {
    const auto& tok = get(path);
    for (const char* s : texts) {
      std::string in = s;
      auto ids = tok.encode(in, false, false);
      INFO(path << " [" << in << "] ids " << ids_str(ids));
      CHECK(tok.decode(ids, true) == in);
      if (in.empty()) CHECK(ids.empty());
    }
  }
}

TEST_CASE("invalid UTF-8 never fails and byte-level BPE keeps every byte", "[tokenizer][roundtrip]") {
  const std::string bad = std::string("ok \xFF\xFE broken \xE2\x82 tail \xC3", 23);
  for (const char* path : {"models/vocab/ggml-vocab-gpt-2.gguf", "models/tokenizers/qwen2.5-qwen3-bpe",
                           "models/tokenizers/llama3.2-bpe", "models/vocab/ggml-vocab-llama-spm.gguf"}) {
    const auto& tok = get(path);
    auto ids = tok.encode(bad, false, false);
    INFO(path);
    CHECK(!ids.empty());
    CHECK(tok.decode(ids, true) == bad);
  }
}

TEST_CASE("long texts (word cache) encode exactly like their short pieces", "[tokenizer][bpe]") {
  // A fragment of >= 256 words merges each distinct word once and copies repeats. A block
  // that starts with a letter and ends with a newline pre-tokenizes identically on its own
  // and repeated, so the long encoding must be the short one repeated.
  const std::string block =
      "Well, Prince, so Genoa and Lucca are now just family estates of the Buonapartes. "
      "But I warn you, if you don't tell me that this means war, if you still try to defend "
      "the infamies and horrors perpetrated by that Antichrist\xe2\x80\x94I really believe he is "
      "Antichrist\xe2\x80\x94I will have nothing more to do with you.\n";
  std::string text;
  for (int i = 0; i < 20; ++i) text += block;
  for (const char* path : {"models/tokenizers/qwen2.5-qwen3-bpe", "models/tokenizers/llama3.2-bpe",
                           "models/tokenizers/smollm2-135m-instruct", "models/vocab/ggml-vocab-gpt-2.gguf"}) {
    const auto& tok = get(path);
    const auto one = tok.encode(block, false, false);
    std::vector<int32_t> want;
    for (int i = 0; i < 20; ++i) want.insert(want.end(), one.begin(), one.end());
    INFO(path);
    CHECK(tok.encode(text, false, false) == want);
    CHECK(tok.decode(want, false) == text);
  }
}
