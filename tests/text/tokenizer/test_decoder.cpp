// Incremental (streaming) decoding: pushing ids one at a time yields exactly decode() of
// the whole sequence, and the text emitted after every token is complete UTF-8.
#include "catch.hpp"

#include "base/utf8.hpp"
#include "common.hpp"

using namespace vks::text;
using namespace vks::text::test;

namespace {

void check_stream(const tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  const std::string whole = tok.decode(ids, skip_special);
  incremental_decoder dec(tok, skip_special);
  std::string acc;
  for (size_t k = 0; k < ids.size(); ++k) {
    std::string part = dec.push(ids[k]);
    INFO("after token " << k << " (id " << ids[k] << ")");
    CHECK(vks::utf8::valid(part));  // never a partial character
    acc += part;
    CHECK(whole.compare(0, acc.size(), acc) == 0);  // a prefix of the final text
  }
  acc += dec.flush();
  CHECK(acc == whole);
}

const char* const k_texts[] = {
    "Hello, 世界! 🦙🚀👨‍👩‍👧 café", "  spaces\tand\nnewlines  ", "日本語のテキスト", "\xF0\x9F\x98\x81 x",
};

}  // namespace

TEST_CASE("incremental decoder equals decode() at every split point", "[tokenizer][decoder]") {
  for (const char* path : {"models/vocab/ggml-vocab-llama-spm.gguf", "models/vocab/ggml-vocab-gpt-2.gguf",
                           "models/tokenizers/qwen2.5-qwen3-bpe", "models/tokenizers/smollm2-135m-instruct"}) {
    const auto& tok = get(path);
    for (const char* s : k_texts) {
      INFO(path << " [" << s << "]");
      auto ids = tok.encode(s, true, true);
      check_stream(tok, ids, true);
      check_stream(tok, ids, false);
    }
  }
}

TEST_CASE("incremental decoder holds back bytes of a split character", "[tokenizer][decoder]") {
  const auto& spm = get("models/vocab/ggml-vocab-llama-spm.gguf");
  // U+1F999 (🦙) has no piece in the Llama-2 vocabulary: four <0xNN> byte tokens.
  auto ids = spm.encode("\xF0\x9F\xA6\x99", false, false);
  REQUIRE(ids.size() >= 4);
  CHECK(spm.token_piece(ids.back()) == "<0x99>");
  incremental_decoder dec(spm);
  std::string out;
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    out += dec.push(ids[i]);
  }
  CHECK(out.find('\xF0') == std::string::npos);  // nothing of the emoji yet
  out += dec.push(ids.back());
  CHECK(out.size() >= 4);
  CHECK(out.substr(out.size() - 4) == "\xF0\x9F\xA6\x99");
  CHECK(dec.flush().empty());
}

TEST_CASE("incremental decoder: SentencePiece leading space", "[tokenizer][decoder]") {
  const auto& spm = get("models/vocab/ggml-vocab-llama-spm.gguf");
  auto ids = spm.encode("Hello world", false, false);  // ▁Hello ▁world
  incremental_decoder start(spm);
  CHECK(start.push(ids[0]) == "Hello");
  CHECK(start.push(ids[1]) == " world");
  incremental_decoder cont(spm, true, /*at_start=*/false);  // continuation after a prompt
  CHECK(cont.push(ids[0]) == " Hello");
  start.reset();
  CHECK(start.push(ids[0]) == "Hello");
  // A skipped BOS does not count as text: the space of the first piece is still dropped.
  incremental_decoder with_bos(spm);
  CHECK(with_bos.push(spm.bos()).empty());
  CHECK(with_bos.push(ids[0]) == "Hello");
}

TEST_CASE("incremental decoder: invalid ids and flush of an unfinished character", "[tokenizer][decoder]") {
  const auto& gpt2 = get("models/vocab/ggml-vocab-gpt-2.gguf");
  incremental_decoder dec(gpt2);
  CHECK(dec.push(-5).empty());
  CHECK(dec.push(gpt2.n_vocab() + 10).empty());
  auto ids = gpt2.encode("\xF0\x9F\xA6\x99", false, false);  // U+1F999 as byte-level pieces
  REQUIRE(ids.size() >= 2);
  CHECK(dec.push(ids[0]).empty());
  CHECK(dec.flush() == gpt2.token_text(ids[0]));  // flush releases the raw bytes
}
