// llama.cpp's published tokenizer vectors for every ggml-vocab-*.gguf (with its .inp/.out)
// in the directory VKS_LLAMACPP_VOCAB: the vocabularies too big to commit (a llama.cpp
// checkout's models/). Skipped (exit 77) when the variable is unset or names no such file.
// BPE vocabularies need their tokenizer.ggml.pre to be known; other tokenizer models that
// vkserve does not load (WordPiece, Unigram) are reported and not counted.
#include "catch.hpp"

#include <filesystem>

#include "common.hpp"

using namespace vks::text;
using namespace vks::text::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> vocab_files() {
  std::vector<std::string> out;
  const char* dir = std::getenv("VKS_LLAMACPP_VOCAB");
  std::error_code ec;
  if (!dir || !fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string p = e.path().string();
    const std::string name = e.path().filename().string();
    if (name.rfind("ggml-vocab-", 0) == 0 && e.path().extension() == ".gguf" && fs::file_size(e.path(), ec) > 0 &&
        fs::exists(p + ".inp") && fs::exists(p + ".out"))
      out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline const bool needs_dir = vks::test_main::require("", [] {
  return vocab_files().empty() ? std::string("VKS_LLAMACPP_VOCAB names no directory of ggml-vocab-*.gguf with .inp/.out")
                               : std::string();
});

}  // namespace

TEST_CASE("llama.cpp vectors of every vocabulary in VKS_LLAMACPP_VOCAB", "[tokenizer][vectors]") {
  size_t checked = 0;
  for (const auto& path : vocab_files()) {
    auto tok = tokenizer::load(path);
    if (!tok) {
      // Only tokenizer models outside vkserve's scope may fail to load; a BPE/SPM one must load.
      INFO(path << ": " << tok.error().message);
      CHECK(tok.error().message.find("tokenizer model") != std::string::npos);
      WARN("not loaded: " << path << ": " << tok.error().message);
      continue;
    }
    size_t n = 0;
    std::string fails = vector_failures(**tok, path, n);
    INFO(path << " (" << n << " cases)\n" << fails);
    CHECK(fails.empty());
    ++checked;
  }
  CHECK(checked > 0);
}
