// llama.cpp `tokenizer.ggml.pre` presets: the names its vocabulary loader accepts, each
// with its split regexes and the loader flags that go with it. Data only; pretokenizer::
// preset() compiles a row.
#pragma once

#include <array>
#include <string_view>
#include <vector>

namespace vks::text::presets {

struct row {
  std::array<const char*, 24> names{};    // aliases; unused slots are nullptr
  std::array<const char*, 6> regexes{};   // split steps in order (isolated); nullptr ends
  bool ignore_merges = false;             // a word that is a whole token is not merged
  bool add_bos = false;                   // default of tokenizer.ggml.add_bos_token
  bool byte_encode = true;                // false: BPE over raw UTF-8, not GPT-2 bytes
  bool escape_spaces = false;             // ' ' -> U+2581 before splitting (SPM-style BPE)
  // llama.cpp's Gemma 4 pre-type: add_bos is on whatever tokenizer.ggml.add_bos_token says,
  // and a word of only '\n' that is itself a token is that token (no merging).
  bool gemma4 = false;
};

// The row naming `name`, or nullptr.
const row* find(std::string_view name);
// Every accepted name (for tests and messages).
std::vector<std::string_view> names();

}  // namespace vks::text::presets
