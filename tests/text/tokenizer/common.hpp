// Shared helpers for the tokenizer tests: test-data paths (VKS_SHARED), the llama.cpp
// .inp/.out vector format, and loading the tokenizers the vectors pair with.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "precondition.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace vks::text::test {

inline std::string shared_path(const std::string& rel) {
  const char* s = std::getenv("VKS_SHARED");
  return std::string(s ? s : "../shared") + "/" + rel;
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Test data is required; when the shared directory is absent the whole executable is
// skipped (exit 77, before any test), never passed.
inline const bool needs_shared = vks::test_main::require("", [] {
  std::ifstream f(shared_path("models/vocab/ggml-vocab-llama-spm.gguf"));
  return f ? std::string() : "test data not found under VKS_SHARED=" + shared_path("");
});

// Loaded once per process (loading the big vocabularies takes a while in Debug builds).
inline const tokenizer& get(const std::string& rel, const load_options& opt = {}) {
  static std::vector<std::pair<std::string, std::unique_ptr<tokenizer>>> cache;
  for (auto& [k, v] : cache)
    if (k == rel) return *v;
  auto t = tokenizer::load(shared_path(rel), opt);
  if (!t) {
    std::fprintf(stderr, "failed to load %s: %s\n", rel.c_str(), t.error().message.c_str());
    std::abort();
  }
  cache.emplace_back(rel, std::move(*t));
  return *cache.back().second;
}

struct vector_case {
  std::string input;
  std::vector<int32_t> expected;
};

// llama.cpp test-tokenizer-0 format: inputs separated by "\n__ggml_vocab_test__\n",
// one line of space-separated ids per input in the .out file.
inline std::vector<vector_case> read_vectors_at(const std::string& inp_path, const std::string& out_path) {
  std::string raw = slurp(inp_path);
  std::string outs = slurp(out_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<vector_case> v;
  for (size_t pos = 0; pos < raw.size();) {
    size_t next = raw.find(sep, pos);
    if (next == std::string::npos) break;
    v.push_back({raw.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream lines(outs);
  std::string line;
  for (auto& c : v) {
    if (!std::getline(lines, line)) break;
    std::istringstream ids(line);
    int32_t id = 0;
    while (ids >> id) c.expected.push_back(id);
  }
  return v;
}

inline std::vector<vector_case> read_vectors(const std::string& inp_rel, const std::string& out_rel) {
  return read_vectors_at(shared_path(inp_rel), shared_path(out_rel));
}

// Path of a file committed to this repository (VKS_SOURCE_ROOT, set by meson test).
inline std::string source_path(const std::string& rel) {
  const char* s = std::getenv("VKS_SOURCE_ROOT");
  return std::string(s ? s : ".") + "/" + rel;
}

// Runs every vector of `gguf`.inp/.out (llama.cpp test-tokenizer-0: no BOS, no special
// parsing) and returns the failures described, one per line ("" when all match).
inline std::string vector_failures(const tokenizer& tok, const std::string& gguf, size_t& n_cases) {
  auto cases = read_vectors_at(gguf + ".inp", gguf + ".out");
  n_cases = cases.size();
  std::string fails;
  for (const auto& c : cases) {
    auto got = tok.encode(c.input, false, false);
    std::string ids_got, ids_want;
    for (int32_t i : got) ids_got += (ids_got.empty() ? "" : " ") + std::to_string(i);
    for (int32_t i : c.expected) ids_want += (ids_want.empty() ? "" : " ") + std::to_string(i);
    if (got != c.expected) fails += "input [" + c.input + "]\n  expected: " + ids_want + "\n  got:      " + ids_got + "\n";
  }
  return fails;
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t i : ids) s += (s.empty() ? "" : " ") + std::to_string(i);
  return s;
}

}  // namespace vks::text::test
