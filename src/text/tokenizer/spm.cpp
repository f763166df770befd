// SentencePiece-style BPE with scores (llama.cpp's `llama` vocab type): the fragment is
// split into UTF-8 characters, then the adjacent pair whose concatenation is the
// highest-scoring vocabulary piece is merged, leftmost first on ties, until none is left.
// Characters that are not pieces fall back to <0xNN> byte tokens (or unk).
// Only normal and user-defined pieces take part: control/byte/unused tokens never come
// out of plain text (SentencePiece semantics).
#include <algorithm>

#include "text/tokenizer/tokenizer_impl.hpp"

namespace vks::text {

namespace {

struct symbol {
  uint32_t start;  // byte offset in the fragment
  uint32_t n;      // byte length; 0 once absorbed by its left neighbour
  int32_t prev, next;
};

struct bigram {
  float score;
  int32_t left, right;
  uint32_t size;  // bytes of the merged text when queued (stale check)
};

// Heap order: highest score first, then leftmost.
bool later(const bigram& a, const bigram& b) {
  return a.score != b.score ? a.score < b.score : a.left > b.left;
}

int32_t mergeable_id(const tokenizer::impl& t, std::string_view piece) {
  auto it = t.piece_to_id.find(piece);
  if (it == t.piece_to_id.end()) return -1;
  token_type ty = t.types[static_cast<size_t>(it->second)];
  return ty == token_type::normal || ty == token_type::user_defined ? it->second : -1;
}

}  // namespace

void spm_encode_fragment(const tokenizer::impl& t, std::string_view text, std::vector<int32_t>& out) {
  thread_local std::vector<symbol> syms;
  thread_local std::vector<bigram> heap;
  syms.clear();
  heap.clear();
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    auto n = static_cast<uint32_t>(utf8_decode(text, i, cp));
    auto k = static_cast<int32_t>(syms.size());
    syms.push_back({static_cast<uint32_t>(i), n, k - 1, k + 1});
    i += n;
  }
  if (syms.empty()) return;
  syms.back().next = -1;
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const symbol& a = syms[static_cast<size_t>(l)];
    const symbol& b = syms[static_cast<size_t>(r)];
    int32_t id = mergeable_id(t, text.substr(a.start, a.n + b.n));
    if (id < 0) return;
    heap.push_back({t.scores[static_cast<size_t>(id)], l, r, a.n + b.n});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    bigram g = heap.back();
    heap.pop_back();
    symbol& a = syms[static_cast<size_t>(g.left)];
    symbol& b = syms[static_cast<size_t>(g.right)];
    if (a.n == 0 || b.n == 0 || a.n + b.n != g.size || a.next != g.right) continue;
    a.n += b.n;
    b.n = 0;
    a.next = b.next;
    if (b.next >= 0) syms[static_cast<size_t>(b.next)].prev = g.left;
    try_add(a.prev, g.left);
    try_add(g.left, a.next);
  }
  for (int32_t i = 0; i >= 0; i = syms[static_cast<size_t>(i)].next) {
    const symbol& s = syms[static_cast<size_t>(i)];
    std::string_view piece = text.substr(s.start, s.n);
    int32_t id = mergeable_id(t, piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (unsigned char c : piece) {
      int32_t b = t.byte_id[c];
      if (b >= 0) out.push_back(b);
      else if (t.unk_id >= 0) out.push_back(t.unk_id);
    }
  }
}

}  // namespace vks::text
