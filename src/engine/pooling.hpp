// pooling: how an embedding request turns a prompt's final-normed hidden rows into one
// vector (mean of every row, the first row "cls", or the last row), and the post-steps the
// api applies to it: L2 normalisation and Matryoshka truncation (keep the first d
// components, then renormalise). Pure host math, no engine state; unit-tested alone.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace vks::engine {

// GGUF `<arch>.pooling_type` numbering (llama.cpp): 0 none, 1 mean, 2 cls, 3 last (4 rank
// is a reranker's and is not served).
enum class pooling { none, mean, cls, last };
const char* to_string(pooling p) noexcept;
// From the GGUF number; nullopt for values vkserve does not serve (rank, unknown).
std::optional<pooling> pooling_from_gguf(std::int64_t v);

// Accumulates one sequence's hidden rows as its prefill chunks run (rows arrive in
// position order; a row is C floats) and yields the pooled vector.
class pooler {
 public:
  pooler(pooling kind, int width) : kind_(kind), width_(width) {}
  // Which positions' rows the pooling reads: every one (mean), position 0 (cls), the last
  // prompt position (last). `n_prompt`: the prompt's length.
  bool wants(int pos, int n_prompt) const;
  // Adds the row of position `pos` (one that wants() asked for).
  void add(int pos, std::span<const float> row);
  // The pooled vector (not normalised): mean = sum / rows added; cls / last = the row.
  std::vector<float> result() const;
  int rows_added() const { return n_; }
  // Forgets the rows added (a preempted sequence recomputes its prompt from the start).
  void reset() {
    n_ = 0;
    acc_.clear();
  }

 private:
  pooling kind_;
  int width_;
  int n_ = 0;
  std::vector<double> acc_;
};

// v / |v|_2 in place; a zero vector stays zero.
void l2_normalize(std::vector<float>& v);
// Matryoshka: keeps the first `dims` components (dims <= v.size()) and renormalises them.
void truncate_renormalize(std::vector<float>& v, std::size_t dims);

}  // namespace vks::engine
