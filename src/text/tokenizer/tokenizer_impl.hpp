// Internal state of a loaded tokenizer (tokenizer::impl) and the functions the loaders,
// encoders and decoders share. Not part of the public API: only src/text/tokenizer and its
// tests include it. Every loader fills the raw vocabulary and configuration, then calls
// finalize(), which validates them and builds the derived lookup tables.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/tokenizer/normalizer.hpp"
#include "text/tokenizer/pretokenizer.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace vks::text {

// Heterogeneous-lookup hash for string keyed maps (find by string_view without a copy).
struct string_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using string_map = std::unordered_map<std::string, int32_t, string_hash, std::equal_to<>>;

// An added/special token matched in raw text before normalization and pre-tokenization.
struct added_token {
  std::string text;
  int32_t id = -1;
  bool special = false;  // control: matched only with parse_special, skipped by decode
  bool lstrip = false;   // swallow whitespace to the left of a match
  bool rstrip = false;   // swallow whitespace to the right
};

// How token pieces turn back into bytes.
enum class decode_mode {
  byte_level,  // GPT-2 byte<->unicode table (gpt2 GGUF, HF ByteLevel decoder)
  metaspace,   // '▁' -> ' ', <0xNN> byte tokens (SentencePiece, HF Metaspace/ByteFallback)
};

struct bpe_merge {
  int32_t rank = 0;
  int32_t result = -1;  // id of the merged token
};

struct tokenizer::impl {
  tokenizer_kind kind = tokenizer_kind::bpe;

  // --- filled by loaders ---------------------------------------------------------------
  std::vector<std::string> pieces;   // [n_vocab] vocabulary strings as stored
  std::vector<float> scores;         // [n_vocab] spm merge scores (empty for bpe)
  std::vector<token_type> types;     // [n_vocab]
  std::vector<std::pair<std::string, std::string>> merges;  // bpe, in rank order
  std::vector<added_token> added;    // extra special/added tokens beyond `types`
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1, eot_id = -1, eom_id = -1;
  bool add_bos_flag = false, add_eos_flag = false;
  bool add_space_prefix = true;      // spm: prepend ' ' to text at the start / after a special
  bool byte_level = true;            // bpe: initial symbols are bytes via the GPT-2 table
  bool byte_fallback = false;        // bpe (char level): unknown chars -> <0xNN> tokens
  bool ignore_merges = false;        // bpe: a word that is a whole token skips merging (llama3)
  bool whole_newline_runs = false;   // bpe: a '\n'-only word that is a token skips merging (gemma4)
  bool strip_first_space = false;    // decode: drop one leading ' ' of the first piece
  decode_mode dmode = decode_mode::byte_level;
  normalizer norm;
  pretokenizer pre;
  std::string pre_name;
  std::string chat_template;
  std::vector<std::pair<std::string, std::string>> named_templates;
  std::vector<int32_t> prefix_ids, suffix_ids;  // add_special: around each encode()

  // --- built by finalize() -------------------------------------------------------------
  string_map piece_to_id;
  string_map bytes_to_id;            // byte-level bpe: decoded bytes -> id (ignore_merges)
  std::unordered_map<uint64_t, bpe_merge> merge_map;  // (left id << 32 | right id) -> merge
  std::vector<std::string> token_bytes;  // [n_vocab] bytes each token decodes to
  std::vector<uint8_t> special_flag;     // [n_vocab] 1 = skipped by decode(skip_special)
  std::array<int32_t, 256> byte_id{};    // byte-level: token of one byte; spm: <0xNN>; -1 none
  std::vector<added_token> matchers;     // tokens matched in raw text, longest first
  std::array<uint8_t, 256> matcher_first{};  // 1 if some matcher starts with this byte
  std::vector<int32_t> eog;

  result<void> finalize();
  int32_t n_vocab() const { return static_cast<int32_t>(pieces.size()); }
  bool valid_id(int32_t id) const { return id >= 0 && id < n_vocab(); }
};

// Encoders for one pre-tokenized word / one SentencePiece fragment; append ids to out.
void bpe_encode_word(const tokenizer::impl& t, std::string_view word, std::vector<int32_t>& out);
void spm_encode_fragment(const tokenizer::impl& t, std::string_view text, std::vector<int32_t>& out);

// Byte-level BPE's reversible byte <-> printable code point table (GPT-2).
const std::array<uint32_t, 256>& byte_to_codepoint();
// Code point -> byte, or -1 if cp is not in the table.
int codepoint_to_byte(uint32_t cp);
// Piece in table form -> raw bytes (code points outside the table pass through as UTF-8).
std::string byte_level_decode(std::string_view piece);
// Raw bytes -> table form (for building pieces from raw text, e.g. added tokens).
std::string byte_level_encode(std::string_view bytes);

// Decodes one UTF-8 code point at s[i]; returns its length (1..4) and sets cp, or returns 1
// with cp = 0xFFFFFFFF for an invalid byte.
int utf8_decode(std::string_view s, size_t i, uint32_t& cp);

// Loaders shared by from_hf_dir/from_hf_json (load_hf.cpp) and tokenizer_builder.
result<std::unique_ptr<tokenizer::impl>> impl_from_gguf(const vks::gguf::file& f);
result<std::unique_ptr<tokenizer::impl>> impl_from_hf_json(std::string_view tok_json, std::string_view cfg_json,
                                                           const std::string& dir);
result<std::unique_ptr<tokenizer::impl>> impl_from_bpe_files(const std::string& vocab_path,
                                                             const std::string& merges_path,
                                                             const load_options& opt,
                                                             const std::string& dir);
// Applies tokenizer_config.json fields (added_tokens_decoder, bos/eos/pad, add_bos_token,
// add_eos_token, chat_template) to t.
result<void> apply_tokenizer_config(tokenizer::impl& t, std::string_view cfg_json);

struct tokenizer_builder {
  static std::unique_ptr<tokenizer> make(std::unique_ptr<tokenizer::impl> p) {
    return std::unique_ptr<tokenizer>(new tokenizer(std::move(p)));
  }
};

}  // namespace vks::text
