// tokenizer::impl::finalize(): validates what a loader filled in and builds the derived
// tables (lookup maps, merge map, per-token bytes, byte tokens, special-token matchers,
// end-of-generation set). Shared by every loader so all formats behave the same.
#include <algorithm>
#include <cstdio>

#include "base/utf8.hpp"
#include "text/tokenizer/tokenizer_impl.hpp"

namespace vks::text {

namespace {

// Token texts that end generation (in addition to eos/eot/eom ids); the list llama.cpp and
// HF generation configs use for common families. As in llama.cpp, such a token that is not
// typed control becomes control (Gemma 4 GGUFs type <|tool_response> user-defined).
constexpr std::string_view k_eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<|end_of_text|>", "<|return|>", "<|call|>",
    "<eos>", "<turn|>", "<|tool_response>",  // gemma4
};

// llama.cpp's Gemma 4 rule: in a vocabulary with <|tool_response>, "</s>" is ordinary text
// (type normal: not matched as a special token, not end of generation, decoded as text).
// Returns its id, or -1 when the rule does not apply.
int32_t demote_s_beside_tool_response(const string_map& piece_to_id, std::vector<token_type>& types) {
  auto tr = piece_to_id.find(std::string_view("<|tool_response>"));
  auto s = piece_to_id.find(std::string_view("</s>"));
  if (tr == piece_to_id.end() || s == piece_to_id.end()) return -1;
  types[static_cast<size_t>(s->second)] = token_type::normal;
  return s->second;
}

std::string metaspace_bytes(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.substr(i, 3) == "\xE2\x96\x81") {  // U+2581 '▁'
      out += ' ';
      i += 3;
    } else {
      out += piece[i++];
    }
  }
  return out;
}

// "<0xNN>" -> NN, else -1.
int parse_byte_piece(std::string_view p) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return -1;
  auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  int h = hex(p[3]), l = hex(p[4]);
  return h < 0 || l < 0 ? -1 : h * 16 + l;
}

}  // namespace

result<void> tokenizer::impl::finalize() {
  // Added tokens may lie beyond the base vocabulary (HF added_tokens).
  for (const auto& a : added) {
    if (a.id < 0 || a.id > (1 << 24)) return fail(errc::parse, "added token id out of range: " + std::to_string(a.id));
    if (static_cast<size_t>(a.id) >= pieces.size()) {
      pieces.resize(static_cast<size_t>(a.id) + 1);
      types.resize(pieces.size(), token_type::unused);
    }
    pieces[static_cast<size_t>(a.id)] = a.text;
    types.resize(pieces.size(), token_type::normal);
    types[static_cast<size_t>(a.id)] = a.special ? token_type::control : token_type::user_defined;
  }
  if (pieces.empty()) return fail(errc::parse, "tokenizer has an empty vocabulary");
  const size_t n = pieces.size();
  if (types.empty()) types.assign(n, token_type::normal);
  if (types.size() != n) return fail(errc::parse, "token_type has " + std::to_string(types.size()) +
                                                      " entries for " + std::to_string(n) + " tokens");
  if (kind == tokenizer_kind::spm) {
    if (scores.empty()) scores.assign(n, 0.0f);
    if (scores.size() != n) return fail(errc::parse, "scores has " + std::to_string(scores.size()) +
                                                         " entries for " + std::to_string(n) + " tokens");
  }
  for (int32_t* id : {&bos_id, &eos_id, &unk_id, &pad_id, &eot_id, &eom_id})
    if (*id >= static_cast<int32_t>(n) || *id < -1) *id = -1;  // absent or bogus: none

  piece_to_id.clear();
  piece_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) piece_to_id[pieces[i]] = static_cast<int32_t>(i);
  for (std::string_view s : k_eog_texts) {
    auto it = piece_to_id.find(s);
    if (it != piece_to_id.end()) types[static_cast<size_t>(it->second)] = token_type::control;
  }
  const int32_t plain_s = demote_s_beside_tool_response(piece_to_id, types);

  token_bytes.assign(n, {});
  special_flag.assign(n, 0);
  byte_id.fill(-1);
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = pieces[i];
    switch (types[i]) {
      case token_type::control:
      case token_type::unknown:
        special_flag[i] = 1;
        token_bytes[i] = p;
        break;
      case token_type::user_defined:
        token_bytes[i] = p;
        break;
      case token_type::byte: {
        int b = parse_byte_piece(p);
        token_bytes[i] = b >= 0 ? std::string(1, static_cast<char>(b)) : p;
        break;
      }
      default: {
        // Byte-fallback vocabularies from tokenizer.json type <0xNN> pieces as normal.
        int b = dmode == decode_mode::metaspace ? parse_byte_piece(p) : -1;
        if (b >= 0) types[i] = token_type::byte;
        token_bytes[i] = b >= 0 ? std::string(1, static_cast<char>(b))
                         : dmode == decode_mode::byte_level ? byte_level_decode(p) : metaspace_bytes(p);
        break;
      }
    }
  }
  // Byte tokens: <0xNN> pieces (SentencePiece / byte fallback) or byte-level single chars.
  if (byte_level && kind == tokenizer_kind::bpe) {
    const auto& cps = byte_to_codepoint();
    for (int b = 0; b < 256; ++b) {
      std::string s;
      utf8::append(s, cps[static_cast<size_t>(b)]);
      auto it = piece_to_id.find(s);
      if (it != piece_to_id.end()) byte_id[static_cast<size_t>(b)] = it->second;
    }
  } else {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = piece_to_id.find(std::string_view(name, 6));
      if (it != piece_to_id.end()) byte_id[static_cast<size_t>(b)] = it->second;
    }
  }
  if (ignore_merges && byte_level) {
    bytes_to_id.clear();
    for (size_t i = 0; i < n; ++i)
      if (types[i] == token_type::normal) bytes_to_id.emplace(token_bytes[i], static_cast<int32_t>(i));
  }

  merge_map.clear();
  merge_map.reserve(merges.size());
  std::string cat;
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [a, b] = merges[r];
    auto ia = piece_to_id.find(a), ib = piece_to_id.find(b);
    cat = a;
    cat += b;
    auto ic = piece_to_id.find(cat);
    if (ia == piece_to_id.end() || ib == piece_to_id.end() || ic == piece_to_id.end()) continue;
    uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(ia->second)) << 32) | static_cast<uint32_t>(ib->second);
    merge_map.emplace(key, bpe_merge{static_cast<int32_t>(r), ic->second});
  }
  // A byte-level vocabulary may lack some bytes (SmolLM2 has no token for most C0
  // controls); like Hugging Face without unk_token, such bytes are dropped by encode().

  // Matchers: control, user-defined and unknown tokens, longest first (flags from `added`).
  matchers.clear();
  matcher_first.fill(0);
  for (size_t i = 0; i < n; ++i) {
    token_type ty = types[i];
    if (pieces[i].empty() || (ty != token_type::control && ty != token_type::user_defined && ty != token_type::unknown))
      continue;
    added_token m{pieces[i], static_cast<int32_t>(i), ty != token_type::user_defined, false, false};
    for (const auto& a : added)
      if (a.id == m.id) { m.lstrip = a.lstrip; m.rstrip = a.rstrip; }
    matchers.push_back(std::move(m));
    matcher_first[static_cast<unsigned char>(pieces[i][0])] = 1;
  }
  std::stable_sort(matchers.begin(), matchers.end(),
                   [](const added_token& x, const added_token& y) { return x.text.size() > y.text.size(); });

  eog.clear();
  for (int32_t id : {eos_id, eot_id, eom_id})
    if (id >= 0) eog.push_back(id);
  for (std::string_view s : k_eog_texts) {
    auto it = piece_to_id.find(s);
    if (it != piece_to_id.end()) eog.push_back(it->second);
  }
  if (plain_s >= 0) eog.erase(std::remove(eog.begin(), eog.end(), plain_s), eog.end());
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

  prefix_ids.erase(std::remove_if(prefix_ids.begin(), prefix_ids.end(), [&](int32_t i) { return !valid_id(i); }), prefix_ids.end());
  suffix_ids.erase(std::remove_if(suffix_ids.begin(), suffix_ids.end(), [&](int32_t i) { return !valid_id(i); }), suffix_ids.end());
  return ok();
}

}  // namespace vks::text
