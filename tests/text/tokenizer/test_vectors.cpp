// Every llama.cpp-format test vector in shared/models/vocab, with the vocabulary or
// tokenizer files it pairs with (SOURCES.md). Ids carry no BOS: encode(add_special=false,
// parse_special=false), as llama.cpp's test-tokenizer-0 does.
#include "catch.hpp"

#include "common.hpp"

using namespace vks::text;
using namespace vks::text::test;

namespace {

void check_vectors(const tokenizer& tok, const std::string& inp, const std::string& out) {
  auto cases = read_vectors(inp, out);
  REQUIRE(cases.size() > 10);
  size_t n_fail = 0;
  for (const auto& c : cases) {
    auto got = tok.encode(c.input, false, false);
    if (got != c.expected) {
      ++n_fail;
      UNSCOPED_INFO("input: [" << c.input << "]\n  expected: " << ids_str(c.expected) << "\n  got:      " << ids_str(got));
    }
    // Decoding the expected ids gives the input back (all these inputs are valid UTF-8).
    CHECK(tok.decode(c.expected, true) == c.input);
  }
  CHECK(n_fail == 0);
}

}  // namespace

TEST_CASE("vectors: llama-spm (SentencePiece, GGUF)", "[tokenizer][vectors]") {
  check_vectors(get("models/vocab/ggml-vocab-llama-spm.gguf"), "models/vocab/ggml-vocab-llama-spm.gguf.inp",
                "models/vocab/ggml-vocab-llama-spm.gguf.out");
}

TEST_CASE("vectors: phi-3 (SentencePiece, GGUF)", "[tokenizer][vectors]") {
  check_vectors(get("models/vocab/ggml-vocab-phi-3.gguf"), "models/vocab/ggml-vocab-phi-3.gguf.inp",
                "models/vocab/ggml-vocab-phi-3.gguf.out");
}

TEST_CASE("vectors: gpt-2 (byte-level BPE, GGUF)", "[tokenizer][vectors]") {
  check_vectors(get("models/vocab/ggml-vocab-gpt-2.gguf"), "models/vocab/ggml-vocab-gpt-2.gguf.inp",
                "models/vocab/ggml-vocab-gpt-2.gguf.out");
}

TEST_CASE("vectors: qwen2 (vocab.json + merges.txt)", "[tokenizer][vectors]") {
  const auto& tok = get("models/tokenizers/qwen2.5-qwen3-bpe");
  CHECK(tok.pre() == "qwen2");
  check_vectors(tok, "models/vocab/ggml-vocab-qwen2.gguf.inp", "models/vocab/ggml-vocab-qwen2.gguf.out");
}

TEST_CASE("vectors: llama-bpe (Llama 3 encoder.json + vocab.bpe)", "[tokenizer][vectors]") {
  const auto& tok = get("models/tokenizers/llama3.2-bpe");
  CHECK(tok.pre() == "llama3");
  check_vectors(tok, "models/vocab/ggml-vocab-llama-bpe.gguf.inp", "models/vocab/ggml-vocab-llama-bpe.gguf.out");
}

TEST_CASE("vectors: smollm2 (tokenizer.json)", "[tokenizer][vectors]") {
  check_vectors(get("models/tokenizers/smollm2-135m-instruct"), "models/vocab/smollm2-135m-instruct.tokenizer.inp",
                "models/vocab/smollm2-135m-instruct.tokenizer.out");
}
