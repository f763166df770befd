// Public tokenizer API of the text layer: text <-> token ids for SentencePiece-style
// (score-merged, `tokenizer.ggml.model = llama`) and byte-level BPE (rank-merged, `gpt2`)
// vocabularies, loaded from GGUF metadata or Hugging Face files, plus the streaming-safe
// incremental decoder. Conventions follow llama.cpp (what GGUF users expect) and agree with
// Hugging Face `tokenizers` on every test vector in shared/models/vocab.
// Thread-safety: a tokenizer is immutable after loading; encode/decode are const and safe
// to call from any number of threads at once. incremental_decoder is single-threaded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/gguf.hpp"
#include "base/result.hpp"

namespace vks::text {

enum class tokenizer_kind { spm, bpe };  // SentencePiece-style (scores) | byte-level BPE (ranks)

// Per-token attribute (GGUF `tokenizer.ggml.token_type` values 1..6).
enum class token_type : uint8_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

// Options for loaders that cannot tell everything from the files themselves.
struct load_options {
  // Pre-tokenizer preset by its `tokenizer.ggml.pre` name ("gpt-2", "llama3", "qwen2",
  // "smollm", ...). Empty: from the file, else guessed (vocab.json+merges.txt -> qwen2 if
  // tokenizer_config.json says Qwen2 or the vocab has Qwen's size; encoder.json+vocab.bpe
  // -> llama3 for a 128000-token vocab, gpt-2 otherwise).
  std::string pre;
  // Extra tokenizer_config.json (added_tokens_decoder, bos/eos, chat_template) for a
  // vocab.json+merges.txt pair whose directory lacks one. Empty: none.
  std::string config_path;
};

class tokenizer {
 public:
  // GGUF metadata `tokenizer.ggml.*` (vocab-only files included).
  static result<std::unique_ptr<tokenizer>> from_gguf(const vks::gguf::file& f);
  // A Hugging Face directory: tokenizer.json (+ tokenizer_config.json, chat_template.jinja),
  // or vocab.json + merges.txt, or encoder.json + vocab.bpe (GPT-2 style files).
  static result<std::unique_ptr<tokenizer>> from_hf_dir(const std::string& dir, const load_options& opt = {});
  // tokenizer.json text (+ optional tokenizer_config.json text); for tests and embedders.
  static result<std::unique_ptr<tokenizer>> from_hf_json(std::string_view tokenizer_json,
                                                         std::string_view config_json = {});
  // A .gguf file or a directory as above.
  static result<std::unique_ptr<tokenizer>> load(const std::string& path, const load_options& opt = {});

  ~tokenizer();
  tokenizer(const tokenizer&) = delete;
  tokenizer& operator=(const tokenizer&) = delete;

  // Text -> ids. add_special: prepend BOS / append EOS as the model's config says
  // (add_bos()/add_eos()). parse_special: text like "<|im_end|>" becomes its control token;
  // when false only user-defined added tokens are matched (llama.cpp's rule) and control
  // token text is tokenized as plain text. Invalid UTF-8 is encoded byte-wise, never fails.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special = true) const;

  // Ids -> text. skip_special drops control tokens (BOS/EOS/<|im_end|>...) from the output.
  // SentencePiece: '▁' -> ' ', <0xNN> -> byte NN, and the leading space that encode added is
  // removed when the sequence starts at the first token (llama.cpp / HF behaviour).
  // Out-of-range ids decode to nothing. The result may hold invalid UTF-8 only if the ids do.
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;
  // The bytes one token stands for (no leading-space removal; control tokens give their text).
  std::string token_text(int32_t id) const;
  // The raw vocabulary string (e.g. "▁the", "Ġthe", "<0x0A>"); empty if out of range.
  const std::string& token_piece(int32_t id) const;

  tokenizer_kind kind() const;
  int32_t n_vocab() const;
  int32_t bos() const;  // -1 if the model has none
  int32_t eos() const;  // -1 if none
  int32_t unk() const;  // -1 if none
  int32_t pad() const;  // -1 if none
  bool add_bos() const;
  bool add_eos() const;
  bool is_eog(int32_t id) const;      // end of generation: eos, eot, <|im_end|>, <|eom_id|>...
  bool is_special(int32_t id) const;  // control tokens (skipped by decode(skip_special))
  token_type type(int32_t id) const;
  std::optional<int32_t> find(std::string_view piece) const;  // exact vocabulary string
  const std::vector<int32_t>& eog_ids() const;

  // What the chat layer needs.
  std::string bos_text() const;  // "" if none
  std::string eos_text() const;
  // Default chat template ("" if none): GGUF `tokenizer.chat_template`,
  // tokenizer_config.json `chat_template` (string, or the entry named "default" of a
  // list), else chat_template.jinja beside the files.
  const std::string& chat_template() const;
  // A named template from a list-valued tokenizer_config.json `chat_template` (e.g.
  // "tool_use"), or GGUF `tokenizer.chat_template.<name>`.
  std::optional<std::string> chat_template(std::string_view name) const;
  const std::string& pre() const;  // pre-tokenizer preset name in use ("" = custom/none)

  struct impl;  // defined in tokenizer_impl.hpp (internal)
  const impl& internals() const { return *impl_; }

 private:
  explicit tokenizer(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
  friend struct tokenizer_builder;
};

// Streaming detokenizer for one sequence: push ids as they are sampled and get back only
// complete UTF-8 text. The concatenation of every push() and the final flush() equals
// tokenizer.decode(all ids, skip_special) exactly. Bytes of an unfinished multi-byte
// character (split across byte tokens or BPE pieces) are held back; flush() releases them
// (invalid sequences come out as they are). Keeps a reference to the tokenizer, which must
// outlive it. Not thread-safe; one per request.
class incremental_decoder {
 public:
  // at_start: the first pushed token begins the text (SentencePiece's leading space is
  // dropped, as decode() does). Pass false when decoding a continuation, e.g. generated
  // tokens after a prompt, where that space is real text (llama-server / vLLM behaviour).
  explicit incremental_decoder(const tokenizer& tok, bool skip_special = true, bool at_start = true);
  std::string push(int32_t id);
  std::string flush();
  void reset();
  // The next pushed token's leading space will be dropped (SentencePiece, text start).
  bool drops_next_space() const;

 private:
  const tokenizer* tok_;
  bool skip_special_;
  bool at_start_;
  bool first_ = true;     // no token emitted yet (SentencePiece leading-space rule)
  std::string pending_;   // bytes not yet returned (an incomplete UTF-8 tail)
};

}  // namespace vks::text
