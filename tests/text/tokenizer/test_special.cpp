// Special tokens: parse_special on/off, BOS/EOS per model config, skip_special in decode,
// end-of-generation ids, chat-template and token strings for the chat layer.
#include "catch.hpp"

#include <algorithm>

#include "common.hpp"

using namespace vks::text;
using namespace vks::text::test;

namespace {

const tokenizer& qwen() {
  load_options opt;
  opt.config_path = shared_path("models/tokenizers/qwen2.5-0.5b-instruct/tokenizer_config.json");
  static auto t = tokenizer::from_hf_dir(shared_path("models/tokenizers/qwen2.5-qwen3-bpe"), opt);
  REQUIRE(t.ok());
  return **t;
}

bool contains(const std::vector<int32_t>& v, int32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

TEST_CASE("Qwen: control tokens are parsed only with parse_special", "[tokenizer][special]") {
  const auto& t = qwen();
  const std::string prompt = "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n";
  auto on = t.encode(prompt, false, true);
  REQUIRE(on.size() > 4);
  CHECK(on.front() == 151644);
  CHECK(contains(on, 151645));
  CHECK(t.decode(on, false) == prompt);
  CHECK(t.decode(on, true) == "user\nHi there\nassistant\n");
  auto off = t.encode(prompt, false, false);
  CHECK(!contains(off, 151644));
  CHECK(!contains(off, 151645));
  CHECK(t.decode(off, true) == prompt);  // plain text survives skip_special
  CHECK(t.is_eog(151645));
  CHECK(t.is_eog(151643));
  CHECK(!t.is_eog(151644));
  CHECK(t.is_special(151644));
  CHECK(!t.is_special(9707));
  CHECK(t.eos() == 151645);
  CHECK(t.eos_text() == "<|im_end|>");
  CHECK(t.bos() == -1);
  CHECK(!t.add_bos());
  CHECK(t.encode("Hello", true) == t.encode("Hello", false));  // Qwen adds no BOS
  CHECK(t.chat_template().find("<|im_start|>") != std::string::npos);
  CHECK(t.find("<|im_end|>") == 151645);
}

TEST_CASE("Llama-2 SentencePiece: BOS, <s> text and space prefix after specials", "[tokenizer][special]") {
  const auto& t = get("models/vocab/ggml-vocab-llama-spm.gguf");
  CHECK(t.bos() == 1);
  CHECK(t.eos() == 2);
  CHECK(t.add_bos());
  CHECK(!t.add_eos());
  CHECK(t.bos_text() == "<s>");
  auto plain = t.encode("Hello", false);
  auto with = t.encode("Hello", true);
  REQUIRE(with.size() == plain.size() + 1);
  CHECK(with[0] == 1);
  CHECK(t.decode(with, true) == "Hello");
  CHECK(t.decode(with, false) == "<s> Hello");  // HF: the space is kept after a visible <s>
  auto parsed = t.encode("<s>Hello", false, true);
  CHECK(parsed.front() == 1);
  CHECK(std::vector<int32_t>(parsed.begin() + 1, parsed.end()) == plain);
  auto unparsed = t.encode("<s>Hello", false, false);
  CHECK(!contains(unparsed, 1));
  CHECK(t.token_text(t.find("<0x0A>").value()) == "\n");
  CHECK(t.token_text(t.find("\xE2\x96\x81the").value()) == " the");
  CHECK(t.is_eog(2));
  CHECK(t.kind() == tokenizer_kind::spm);
}

TEST_CASE("Phi-3: user-defined tokens match even without parse_special", "[tokenizer][special]") {
  const auto& t = get("models/vocab/ggml-vocab-phi-3.gguf");
  CHECK(!t.chat_template().empty());
  auto end = t.find("<|end|>");
  REQUIRE(end.has_value());
  CHECK(t.is_eog(*end));
  auto ids = t.encode("<|user|>\nHi<|end|>", false, true);
  CHECK(contains(ids, *end));
}

TEST_CASE("SmolLM2 tokenizer.json + tokenizer_config.json", "[tokenizer][special]") {
  const auto& t = get("models/tokenizers/smollm2-135m-instruct");
  CHECK(t.n_vocab() == 49152);
  CHECK(t.find("<|im_start|>") == 1);
  CHECK(t.encode("<|im_start|>user", false, true).front() == 1);
  CHECK(t.encode("<|im_start|>user", false, false).front() != 1);
  CHECK(t.is_eog(2));
  CHECK(t.eos_text() == "<|im_end|>");
  CHECK(!t.chat_template().empty());
}

TEST_CASE("Llama 3 files without a config get the Llama 3 special tokens", "[tokenizer][special]") {
  const auto& t = get("models/tokenizers/llama3.2-bpe");
  CHECK(t.n_vocab() == 128256);
  CHECK(t.bos() == 128000);
  CHECK(t.add_bos());
  CHECK(t.encode("Hi", true).front() == 128000);
  auto ids = t.encode("<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", false, true);
  CHECK(ids.front() == 128006);
  CHECK(ids.back() == 128009);
  CHECK(t.is_eog(128009));
  CHECK(t.is_eog(128001));
  CHECK(t.is_eog(128008));
}
