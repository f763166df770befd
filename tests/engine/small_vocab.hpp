// A hand-made SentencePiece-like tokenizer (tokenizer.json text, no file) for engine
// tests that need token texts: BOS/EOS control tokens, "▁" pieces (the first one of a
// text loses its space), byte tokens splitting "β" (CE B2), and a think marker in two
// pieces. Ids are fixed (the enum); encode() is not meant to be used.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "text/tokenizer/tokenizer.hpp"

namespace vks::engine::test {

enum small_id : int {
  unk = 0, bos, eos, sp, lbrace, rbrace, quote, a, b, colon, one, sp_lbrace, quoted_a, byte_ce, byte_b2, x,
  think_open, think_close, sp_ab, byte_nl, n_small
};

inline const text::tokenizer& small_vocab() {
  static const std::unique_ptr<text::tokenizer> tok = [] {
    const char* pieces[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "{", "}", "\\\"", "a", "b", ":", "1",
                            "\xE2\x96\x81{", "\\\"a\\\"", "<0xCE>", "<0xB2>", "x", "</", "think>",
                            "\xE2\x96\x81" "ab", "<0x0A>"};
    std::string vocab;
    for (int i = 0; i < n_small; ++i)
      vocab += std::string(i ? "," : "") + "\"" + pieces[i] + "\": " + std::to_string(i);
    const std::string json = R"({"added_tokens": [
        {"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true},
        {"id": 2, "content": "</s>", "special": true}],
      "normalizer": null, "pre_tokenizer": null,
      "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
      "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "merges": [], "vocab": {)" +
                             vocab + "}}}";
    auto t = text::tokenizer::from_hf_json(json, R"({"bos_token": "<s>", "eos_token": "</s>"})");
    if (!t.ok()) {
      std::fprintf(stderr, "small_vocab: %s\n", t.error().message.c_str());
      std::abort();
    }
    return std::move(*t);
  }();
  return *tok;
}

}  // namespace vks::engine::test
