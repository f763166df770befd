// tokenizer: encode (special-token partition -> per-fragment SentencePiece or
// normalize + pre-tokenize + BPE), decode, accessors, and the incremental decoder.
#include "text/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "base/utf8.hpp"
#include "text/tokenizer/tokenizer_impl.hpp"

namespace vks::text {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// first: the fragment starts the input text (Metaspace prepend_scheme "first").
void encode_fragment(const tokenizer::impl& t, std::string_view frag, bool prev_special, bool first,
                     std::vector<int32_t>& out) {
  if (t.kind == tokenizer_kind::spm) {
    std::string s;
    s.reserve(frag.size() + 8);
    if (t.add_space_prefix && prev_special) s += "\xE2\x96\x81";
    for (char c : frag) {
      if (c == ' ') s += "\xE2\x96\x81"; else s += c;
    }
    spm_encode_fragment(t, s, out);
    return;
  }
  std::string nbuf, pbuf;
  std::string_view text = t.norm.empty() ? frag : t.norm.apply(frag, nbuf);
  if (t.pre.empty()) {
    bpe_encode_word(t, text, out);
    return;
  }
  thread_local std::vector<word_span> words;
  words.clear();
  std::string_view split_text = t.pre.split(text, pbuf, words, first);
  if (words.size() < 256) {
    for (const word_span w : words) bpe_encode_word(t, split_text.substr(w.begin, w.end - w.begin), out);
    return;
  }
  // Long text: words repeat (Zipf), so each distinct word is merged once and its ids are
  // copied from its first occurrence (a word's ids do not depend on its neighbours).
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen;  // word -> [begin, end) in out
  seen.reserve(words.size() / 8);
  for (const word_span w : words) {
    const std::string_view word = split_text.substr(w.begin, w.end - w.begin);
    auto [it, fresh] = seen.try_emplace(word);
    if (fresh) {
      const size_t begin = out.size();
      bpe_encode_word(t, word, out);
      it->second = {begin, out.size()};
      continue;
    }
    for (size_t i = it->second.first; i < it->second.second; ++i) {
      const int32_t id = out[i];
      out.push_back(id);
    }
  }
}

// Longest matcher at text[i] allowed by parse_special, or nullptr.
const added_token* match_at(const tokenizer::impl& t, std::string_view text, size_t i, bool parse_special) {
  if (!t.matcher_first[static_cast<unsigned char>(text[i])]) return nullptr;
  for (const auto& m : t.matchers) {
    if (m.special && !parse_special) continue;
    if (text.compare(i, m.text.size(), m.text) == 0) return &m;
  }
  return nullptr;
}

}  // namespace

tokenizer::tokenizer(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
tokenizer::~tokenizer() = default;

std::vector<int32_t> tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const impl& t = *impl_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special) out = t.prefix_ids;
  bool prev_special = true;  // SentencePiece: a fragment at the start gets the space prefix
  size_t frag_begin = 0;
  for (size_t i = 0; i < text.size();) {
    const added_token* m = match_at(t, text, i, parse_special);
    if (!m) {
      ++i;
      continue;
    }
    size_t frag_end = i;
    if (m->lstrip)
      while (frag_end > frag_begin && is_ws(text[frag_end - 1])) --frag_end;
    if (frag_end > frag_begin) {
      encode_fragment(t, text.substr(frag_begin, frag_end - frag_begin), prev_special, frag_begin == 0, out);
    }
    out.push_back(m->id);
    prev_special = true;
    i += m->text.size();
    if (m->rstrip)
      while (i < text.size() && is_ws(text[i])) ++i;
    frag_begin = i;
    if (frag_end == frag_begin) continue;
  }
  if (frag_begin < text.size()) encode_fragment(t, text.substr(frag_begin), prev_special, frag_begin == 0, out);
  if (add_special) out.insert(out.end(), t.suffix_ids.begin(), t.suffix_ids.end());
  return out;
}

std::string tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  incremental_decoder d(*this, skip_special);
  std::string out;
  for (int32_t id : ids) out += d.push(id);
  out += d.flush();
  return out;
}

std::string tokenizer::token_text(int32_t id) const {
  return impl_->valid_id(id) ? impl_->token_bytes[static_cast<size_t>(id)] : std::string();
}

const std::string& tokenizer::token_piece(int32_t id) const {
  static const std::string empty;
  return impl_->valid_id(id) ? impl_->pieces[static_cast<size_t>(id)] : empty;
}

tokenizer_kind tokenizer::kind() const { return impl_->kind; }
int32_t tokenizer::n_vocab() const { return impl_->n_vocab(); }
int32_t tokenizer::bos() const { return impl_->bos_id; }
int32_t tokenizer::eos() const { return impl_->eos_id; }
int32_t tokenizer::unk() const { return impl_->unk_id; }
int32_t tokenizer::pad() const { return impl_->pad_id; }
bool tokenizer::add_bos() const {
  const auto& p = impl_->prefix_ids;
  return impl_->bos_id >= 0 && std::find(p.begin(), p.end(), impl_->bos_id) != p.end();
}
bool tokenizer::add_eos() const {
  const auto& s = impl_->suffix_ids;
  return impl_->eos_id >= 0 && std::find(s.begin(), s.end(), impl_->eos_id) != s.end();
}
bool tokenizer::is_eog(int32_t id) const {
  return std::binary_search(impl_->eog.begin(), impl_->eog.end(), id);
}
bool tokenizer::is_special(int32_t id) const {
  return impl_->valid_id(id) && impl_->special_flag[static_cast<size_t>(id)] != 0;
}
token_type tokenizer::type(int32_t id) const {
  return impl_->valid_id(id) ? impl_->types[static_cast<size_t>(id)] : token_type::unused;
}
std::optional<int32_t> tokenizer::find(std::string_view piece) const {
  auto it = impl_->piece_to_id.find(piece);
  if (it == impl_->piece_to_id.end()) return std::nullopt;
  return it->second;
}
const std::vector<int32_t>& tokenizer::eog_ids() const { return impl_->eog; }
std::string tokenizer::bos_text() const { return bos() >= 0 ? token_piece(bos()) : std::string(); }
std::string tokenizer::eos_text() const { return eos() >= 0 ? token_piece(eos()) : std::string(); }
const std::string& tokenizer::chat_template() const { return impl_->chat_template; }
std::optional<std::string> tokenizer::chat_template(std::string_view name) const {
  if (name.empty() || name == "default") {
    if (impl_->chat_template.empty()) return std::nullopt;
    return impl_->chat_template;
  }
  for (const auto& [n, tpl] : impl_->named_templates)
    if (n == name) return tpl;
  return std::nullopt;
}
const std::string& tokenizer::pre() const { return impl_->pre_name; }

// --- incremental_decoder -------------------------------------------------------------------

incremental_decoder::incremental_decoder(const tokenizer& tok, bool skip_special, bool at_start)
    : tok_(&tok), skip_special_(skip_special), at_start_(at_start), first_(at_start) {}

std::string incremental_decoder::push(int32_t id) {
  const auto& t = tok_->internals();
  if (!t.valid_id(id)) return {};
  if (skip_special_ && t.special_flag[static_cast<size_t>(id)]) return {};
  const std::string& b = t.token_bytes[static_cast<size_t>(id)];
  if (b.empty()) return {};
  size_t skip = (first_ && t.strip_first_space && b[0] == ' ') ? 1 : 0;
  first_ = false;
  pending_.append(b, skip, std::string::npos);
  size_t n = vks::utf8::complete_prefix(pending_);
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  return out;
}

bool incremental_decoder::drops_next_space() const { return first_ && tok_->internals().strip_first_space; }

std::string incremental_decoder::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

void incremental_decoder::reset() {
  pending_.clear();
  first_ = at_start_;
}

}  // namespace vks::text
