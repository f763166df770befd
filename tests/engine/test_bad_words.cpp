// bad_words token sequences with a real vocabulary (GPT-2 GGUF from shared/models/vocab):
// each word as written and, when that is another token of the same length, after a space;
// leading whitespace is dropped and blank words give nothing. Skips whole (exit 77, before
// any test) without the file.
#include "catch.hpp"
#include "precondition.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/bad_words.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace vks;
using namespace vks::engine;

namespace {

std::string gpt2_vocab() {
  const char* shared = std::getenv("VKS_SHARED");
  return std::string(shared ? shared : "../shared") + "/models/vocab/ggml-vocab-gpt-2.gguf";
}

const bool needs_vocab = vks::test_main::require("", [] {
  return std::filesystem::exists(gpt2_vocab()) ? std::string() : gpt2_vocab() + " not found";
});

}  // namespace

TEST_CASE("bad_words: sequences as written and after a space (vLLM's rule)") {
  const std::string path = gpt2_vocab();
  auto loaded = text::tokenizer::load(path);
  REQUIRE(loaded.ok());
  const auto& tok = **loaded;
  const std::vector<std::string> words{"hello", "  hello", " \t", "New York"};
  auto got = bad_words_token_ids(tok, words);
  const auto hello = tok.encode("hello", false), space_hello = tok.encode(" hello", false);
  REQUIRE(hello.size() == 1);
  REQUIRE(space_hello.size() == 1);
  CHECK(hello != space_hello);
  const auto ny = tok.encode("New York", false), space_ny = tok.encode(" New York", false);
  REQUIRE(ny.size() == 2);
  REQUIRE(space_ny.size() == 2);
  CHECK(got == std::vector<std::vector<token_id>>{hello, space_hello, hello, space_hello, ny, space_ny});

  // A spaced spelling of another length is not added: "Bye" is By|e but " Bye" one
  // token; "zzzzzz" is zz|zz|zz but " zzzzzz" four. "xqzv" is x|q|z|v and " x"|q|z|v.
  got = bad_words_token_ids(tok, std::vector<std::string>{"Bye", "zzzzzz", "xqzv"});
  REQUIRE(tok.encode(" Bye", false).size() == 1);
  CHECK(got == std::vector<std::vector<token_id>>{tok.encode("Bye", false), tok.encode("zzzzzz", false),
                                                  tok.encode("xqzv", false), tok.encode(" xqzv", false)});
}
