// GGUF tokenizer.ggml.model "gemma4" on a small hand-made vocabulary (models/vocab/
// gemma4-mini.gguf, written by tools/llamacpp-reference/gemma4-vocab.mjs): llama.cpp's ids for
// it (.inp/.out, .special.inp/.out, written by the same script through node-llama-cpp), and
// the rules spelled out piece by piece: spaces as '▁', one BPE word per line, newline runs
// looked up whole, <0xNN> byte fallback, special tokens, BOS always added, the EOG set.
#include "catch.hpp"

#include "common.hpp"

using namespace vks::text;
using namespace vks::text::test;

namespace {

const std::string k_vocab = "models/vocab/gemma4-mini.gguf";

const tokenizer& mini() {
  static auto t = [] {
    auto r = tokenizer::load(source_path(k_vocab));
    if (!r) FAIL("gemma4-mini.gguf: " << r.error().message);
    return std::move(*r);
  }();
  return *t;
}

std::vector<std::string> pieces(const tokenizer& t, std::string_view text, bool parse_special = false) {
  std::vector<std::string> out;
  for (int32_t id : t.encode(text, false, parse_special)) out.push_back(t.token_piece(id));
  return out;
}

using strs = std::vector<std::string>;

}  // namespace

TEST_CASE("gemma4: llama.cpp's ids for the hand-made vocabulary", "[tokenizer][gemma4]") {
  const tokenizer& t = mini();
  size_t n = 0;
  CHECK(vector_failures(t, source_path(k_vocab), n).empty());
  CHECK(n > 20);
  auto cases = read_vectors_at(source_path(k_vocab + ".special.inp"), source_path(k_vocab + ".special.out"));
  REQUIRE(cases.size() > 5);
  for (const auto& c : cases) {
    INFO("input [" << c.input << "]");
    CHECK(ids_str(t.encode(c.input, false, true)) == ids_str(c.expected));
    CHECK(t.decode(c.expected, false) == c.input);
  }
}

TEST_CASE("gemma4: spaces, lines, newline runs, byte fallback", "[tokenizer][gemma4]") {
  const tokenizer& t = mini();
  CHECK(t.kind() == tokenizer_kind::bpe);
  CHECK(t.pre() == "gemma4");  // the file says gpt-2: model gemma4 ignores it
  // No space prefix; spaces are '▁' and merge like any character (one word per line).
  CHECK(pieces(t, "hello world") == strs{"hello", "\u2581world"});
  CHECK(pieces(t, " hello") == strs{"\u2581hello"});
  CHECK(pieces(t, "hello   world") == strs{"hello", "\u2581\u2581", "\u2581world"});
  // Newline runs are words of their own, taken whole when the vocabulary has them (it has no
  // merges building "\n\n"), else character by character.
  CHECK(pieces(t, "hello\n\nworld") == strs{"hello", "\n\n", "w", "or", "ld"});
  CHECK(pieces(t, "\n\n\n") == strs{"\n", "\n", "\n"});
  CHECK(pieces(t, "\n\n\n\n") == strs{"\n\n\n\n"});
  // Characters outside the vocabulary become <0xNN> byte tokens.
  CHECK(pieces(t, "h\xC3\xA9z") == strs{"h", "\xC3\xA9", "<0x7A>"});
  CHECK(pieces(t, "\xE6\x97\xA5") == strs{"<0xE6>", "<0x97>", "<0xA5>"});
  CHECK(t.decode(t.encode("a\r\nb \xF0\x9F\x99\x82 h\xC3\xA9", false, false), false) == "a\r\nb \xF0\x9F\x99\x82 h\xC3\xA9");
}

TEST_CASE("gemma4: special tokens, BOS, end of generation", "[tokenizer][gemma4]") {
  const tokenizer& t = mini();
  CHECK(pieces(t, "<|turn>hello<turn|>", true) == strs{"<|turn>", "hello", "<turn|>"});
  CHECK(pieces(t, "<turn|>", false).size() == 7);  // not parsed: seven byte tokens
  // llama.cpp adds BOS for gemma4 although the file's add_bos_token is false.
  CHECK(t.add_bos());
  CHECK(t.encode("hello", true, false) == std::vector<int32_t>{2, 281});
  // <eos> (eos id), <turn|> and <|tool_response> end generation; the file types the last
  // user-defined (as Gemma 4 GGUFs do), the EOG rule makes it control: parsed only with
  // parse_special, skipped by decode(skip_special). <|tool_call> stays user-defined: parsed
  // always, decoded always. Beside <|tool_response>, "</s>" is plain text: not parsed as a
  // special token, not an end.
  CHECK(t.eog_ids() == std::vector<int32_t>{1, 5, 6});
  CHECK(pieces(t, "<|tool_call>x<|tool_response>", false).front() == "<|tool_call>");
  CHECK(pieces(t, "<|tool_call>x<|tool_response>", false).size() == 1 + 1 + 16);
  CHECK(t.decode(std::vector<int32_t>{8, 6}, true) == "<|tool_call>");
  CHECK(pieces(t, "</s>", true) == strs{"<0x3C>", "<0x2F>", "<0x73>", "<0x3E>"});
  CHECK(t.decode(std::vector<int32_t>{7}, true) == "</s>");
}
