// Pre-tokenization: splitting normalized text into words that BPE merges never cross.
// A pretokenizer is a sequence of regex split steps (PCRE2, UTF + Unicode properties, JIT)
// applied one after another to every piece, as Hugging Face's Sequence of Split/Digits/
// ByteLevel pre-tokenizers and llama.cpp's per-`tokenizer.ggml.pre` regex lists do, plus
// optional text transforms (ByteLevel add_prefix_space, Metaspace). Immutable after
// construction; split() is const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace vks::text {

// Hugging Face `SplitDelimiterBehavior`.
enum class split_behavior { isolated, removed, merged_with_previous, merged_with_next, contiguous };

struct word_span {
  uint32_t begin = 0;  // byte offset into the (transformed) text
  uint32_t end = 0;
};

class compiled_regex;  // PCRE2 code + JIT; defined in pretokenizer.cpp

// A PCRE2 regex (UTF, Unicode properties) for HF's Split and Replace patterns.
result<std::shared_ptr<const compiled_regex>> compile_regex(std::string_view pattern);
// Every non-overlapping match of `re` in `text` replaced by `with` (literal text, as HF's
// Replace normalizer does); an empty match inserts `with` and moves on one character.
std::string regex_replace_all(const compiled_regex& re, std::string_view text, std::string_view with);

class pretokenizer {
 public:
  pretokenizer();
  ~pretokenizer();
  pretokenizer(pretokenizer&&) noexcept;
  pretokenizer& operator=(pretokenizer&&) noexcept;

  // What a llama.cpp preset sets besides the split steps (presets.hpp).
  struct preset_flags {
    bool ignore_merges = false;
    bool add_bos = false;      // default when the GGUF has no tokenizer.ggml.add_bos_token
    bool byte_encode = true;   // false: BPE over raw UTF-8 ('▁' for spaces when escaped)
    bool force_add_bos = false;       // add_bos even when the GGUF says false (gemma4)
    bool whole_newline_runs = false;  // a '\n'-only word that is a token is not merged (gemma4)
  };
  // llama.cpp `tokenizer.ggml.pre` names (every one its loader accepts: "gpt-2", "llama3",
  // "deepseek-llm", "kimi-k2", ...). Unknown names fail with errc::unsupported.
  static result<pretokenizer> preset(std::string_view name, preset_flags& flags);
  static bool known_preset(std::string_view name);

  // Adds one split step. literal: pattern is a plain string, not a regex.
  result<void> add_split(std::string_view pattern, split_behavior b, bool invert, bool literal = false);
  // GPT-2's regex as one isolated split step (HF ByteLevel with use_regex).
  result<void> add_gpt2_split();

  // Text transforms applied before splitting (in this order).
  bool prefix_space = false;        // HF ByteLevel add_prefix_space: ' ' + text unless it starts with ' '
  std::string metaspace;            // HF Metaspace replacement ("▁"); empty: none
  bool metaspace_prepend = false;   // Metaspace prepend_scheme always/first
  bool metaspace_first_only = false;  // prepend_scheme "first": only the text's first fragment
  bool metaspace_split = false;     // Metaspace split: words start at each replacement char

  bool empty() const;
  // Transforms `text` into `buf` (if any transform applies; returns the view to split)
  // and appends the words of it to `words`. first_fragment: the text starts the input (no
  // special token before it), for Metaspace's prepend_scheme "first". Each step splits a
  // piece as a string of its own (anchors and lookbehinds see only the piece); a
  // zero-width match is a split point (HF tokenizers and llama.cpp agree).
  std::string_view split(std::string_view text, std::string& buf, std::vector<word_span>& words,
                         bool first_fragment = true) const;

 private:
  struct step {
    std::shared_ptr<const compiled_regex> re;  // shared: immutable, copied between presets
    split_behavior behavior = split_behavior::isolated;
    bool invert = false;
  };
  std::vector<step> steps_;
  void apply_step(const step& s, std::string_view text, const std::vector<word_span>& in,
                  std::vector<word_span>& out) const;
};

}  // namespace vks::text
