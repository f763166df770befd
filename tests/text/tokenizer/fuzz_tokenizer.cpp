// Fuzz target for the tokenizers (text/tokenizer): user text of any bytes goes through
// encode, and the ids through decode and the incremental decoder. The first input byte
// picks the tokenizer (SentencePiece, GPT-2, Qwen2/3, Llama 3.2, SmolLM2: the families the
// server loads) and the flags (add_special, parse_special, skip_special); the rest is the
// text. Checks: no crash/UB; every id is in the vocabulary; the incremental decoder's pushes
// plus flush equal decode() (its contract); for the byte-level BPE vocabularies without a
// normalizer that hold all 256 byte tokens (GPT-2, Llama 3.2), valid UTF-8 encoded without
// special-token parsing decodes back to itself. SmolLM2's vocabulary lacks 21 byte tokens
// (control bytes such as 0x04 and 0x06, and bytes that never occur in UTF-8); like HF
// tokenizers (no unk token, no byte fallback) the encoder drops those bytes, so it is not
// held to the round trip. Reads the vocabularies from $VKS_SHARED/models (tools/fuzz sets
// it).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace vks::text;

namespace {

struct entry {
  const char* path;
  bool lossless;  // byte-level BPE, no normalizer: decode(encode(s)) == s for valid UTF-8
  std::unique_ptr<tokenizer> tok;
};

entry g_toks[] = {
    {"models/vocab/ggml-vocab-llama-spm.gguf", false, nullptr},
    {"models/vocab/ggml-vocab-gpt-2.gguf", true, nullptr},
    {"models/tokenizers/qwen2.5-qwen3-bpe", false, nullptr},
    {"models/tokenizers/llama3.2-bpe", true, nullptr},
    {"models/tokenizers/smollm2-135m-instruct", false, nullptr},
    // Committed to this repository (tools/fuzz runs from its root): the presets with the most
    // split steps (digits alone, CJK runs, a long letter class).
    {"repo:models/vocab/ggml-vocab-deepseek-coder.gguf", false, nullptr},
    {"repo:models/vocab/ggml-vocab-deepseek-llm.gguf", false, nullptr},
    // tokenizer.ggml.model "gemma4" (not lossless: a literal '▁' in the text decodes as ' ').
    {"repo:models/vocab/gemma4-mini.gguf", false, nullptr},
};

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* shared = std::getenv("VKS_SHARED");
  const std::string root = shared ? shared : "../shared";
  for (auto& e : g_toks) {
    const std::string_view p = e.path;
    auto t = tokenizer::load(p.rfind("repo:", 0) == 0 ? std::string(p.substr(5)) : root + "/" + e.path);
    if (!t) {
      std::fprintf(stderr, "fuzz_tokenizer: cannot load %s/%s: %s (set VKS_SHARED)\n", root.c_str(), e.path,
                   t.error().message.c_str());
      std::exit(1);
    }
    e.tok = std::move(*t);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t n_toks = sizeof g_toks / sizeof g_toks[0];
  const entry& e = g_toks[(data[0] & 0x0F) % n_toks];
  const bool add_special = data[0] & 0x10, parse_special = data[0] & 0x20, skip_special = data[0] & 0x40;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const tokenizer& tok = *e.tok;

  const std::vector<int32_t> ids = tok.encode(text, add_special, parse_special);
  for (int32_t id : ids) check(id >= 0 && id < tok.n_vocab(), "id out of range");
  const std::string back = tok.decode(ids, skip_special);

  incremental_decoder inc(tok, skip_special);
  std::string streamed;
  for (int32_t id : ids) streamed += inc.push(id);
  streamed += inc.flush();
  check(streamed == back, "incremental decoding differs from decode()");

  if (e.lossless && !add_special && !parse_special && vks::utf8::valid(text))
    check(back == text, "byte-level BPE round trip lost text");
  return 0;
}
