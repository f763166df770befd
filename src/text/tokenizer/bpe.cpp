// Rank-based BPE on one pre-tokenized word: start from bytes (byte-level) or characters
// (with byte fallback), then repeatedly merge the adjacent pair with the lowest merge rank,
// leftmost first (Hugging Face `tokenizers` and llama.cpp order). O(n log n) per word with
// a heap of candidate merges; stale candidates are detected by re-checking both ids.
#include <algorithm>

#include "text/tokenizer/tokenizer_impl.hpp"

namespace vks::text {

namespace {

struct symbol {
  int32_t id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
};

struct candidate {
  int32_t rank;
  int32_t pos;    // index of the left symbol
  int32_t left;   // ids the pair had when queued
  int32_t right;
  int32_t result;
};

// Heap order: lowest rank first, then leftmost.
bool later(const candidate& a, const candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

void initial_symbols(const tokenizer::impl& t, std::string_view word, std::vector<symbol>& syms) {
  auto push = [&](int32_t id) {
    auto n = static_cast<int32_t>(syms.size());
    syms.push_back({id, n - 1, n + 1});
  };
  if (t.byte_level) {
    for (unsigned char b : word)
      if (t.byte_id[b] >= 0) push(t.byte_id[b]);
  } else {
    for (size_t i = 0; i < word.size();) {
      uint32_t cp = 0;
      auto n = static_cast<size_t>(utf8_decode(word, i, cp));
      auto it = t.piece_to_id.find(word.substr(i, n));
      if (it != t.piece_to_id.end()) {
        push(it->second);
      } else if (t.byte_fallback) {
        for (size_t k = 0; k < n; ++k) {
          int32_t id = t.byte_id[static_cast<unsigned char>(word[i + k])];
          if (id >= 0) push(id);
          else if (t.unk_id >= 0) push(t.unk_id);
        }
      } else if (t.unk_id >= 0) {
        push(t.unk_id);
      }
      i += n;
    }
  }
  if (!syms.empty()) syms.back().next = -1;
}

}  // namespace

void bpe_encode_word(const tokenizer::impl& t, std::string_view word, std::vector<int32_t>& out) {
  if (word.empty()) return;
  // llama.cpp's Gemma 4 rule: its vocabulary has tokens for runs of newlines but no merges
  // building them, so such a run is looked up whole (otherwise merged as usual).
  if (t.whole_newline_runs && word.find_first_not_of('\n') == std::string_view::npos) {
    auto it = t.piece_to_id.find(word);
    if (it != t.piece_to_id.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (t.ignore_merges) {
    const auto& m = t.byte_level ? t.bytes_to_id : t.piece_to_id;
    auto it = m.find(word);
    if (it != m.end()) {
      out.push_back(it->second);
      return;
    }
  }
  thread_local std::vector<symbol> syms;
  thread_local std::vector<candidate> heap;
  syms.clear();
  heap.clear();
  initial_symbols(t, word, syms);
  auto try_push = [&](int32_t pos) {
    if (pos < 0) return;
    int32_t nx = syms[static_cast<size_t>(pos)].next;
    if (nx < 0) return;
    int32_t l = syms[static_cast<size_t>(pos)].id, r = syms[static_cast<size_t>(nx)].id;
    auto it = t.merge_map.find(pair_key(l, r));
    if (it == t.merge_map.end()) return;
    heap.push_back({it->second.rank, pos, l, r, it->second.result});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) try_push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    candidate c = heap.back();
    heap.pop_back();
    symbol& a = syms[static_cast<size_t>(c.pos)];
    if (a.id != c.left || a.next < 0) continue;  // stale: left changed or was absorbed
    symbol& b = syms[static_cast<size_t>(a.next)];
    if (b.id != c.right) continue;
    a.id = c.result;
    b.id = -1;  // absorbed
    a.next = b.next;
    if (b.next >= 0) syms[static_cast<size_t>(b.next)].prev = c.pos;
    if (a.prev >= 0) try_push(a.prev);
    try_push(c.pos);
  }
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[static_cast<size_t>(i)].next)
    out.push_back(syms[static_cast<size_t>(i)].id);
}

}  // namespace vks::text
