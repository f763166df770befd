// Paged KV cache: a fixed pool of blocks of B tokens (default 16) shared by all sequences,
// one K and one V tensor per layer of shape {Hkv_l*D_l, n_blocks*B} (row = cache slot
// block*B + offset; the row width is the layer's own: model_config::layer_kv_width, which
// differs between a Gemma 4's sliding and global layers), plus a free list. Block indices
// are shared by all layers, so one block table addresses every layer of a pool. A sequence owns an ordered list of blocks (its block
// table row). This is the simple allocator the runner uses today; the engine's block
// manager (prefix sharing, preemption) builds on the same layout.
// Window pool (n_window_blocks > 0): the sliding-window layers (model_config::is_swa_layer)
// get their own smaller pool of n_window_blocks blocks, indexed by a second block table
// (batch::window_tables) whose out-of-window blocks the engine releases; the other layers
// keep the main pool. Without it every layer is in the main pool.
// Hybrid models (model_config::is_recurrent_layer): the recurrent layers have no KV at all
// (tensors of no elements); their per-sequence state is in state_cache.hpp. KV-shared layers
// (Gemma 4's trailing ones) have none either: the runner hands them their source's cache.
// Not thread-safe: used from the engine thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gpu/backend.hpp"
#include "model/config.hpp"

namespace vks::model {

// The KV element type for `--kv-cache-dtype` on device `dev`: "f32", "f16", or "auto" = f16
// on GPUs (half the cache's memory and attention's reads) and f32 on CPU devices and the
// reference backend (where f32 matches llama2.c exactly). errc::invalid_argument otherwise.
result<gpu::dtype> kv_cache_dtype(std::string_view option, const gpu::device_info& dev);

// Blocks of a window pool (kv_cache, "Window pool") for n_seqs sequences running together,
// prefill chunks of up to chunk_tokens in all: each sequence holds at most the blocks of its
// window before its next query plus those of its chunk. 0 for a model without
// sliding-window layers. Capped at full_blocks (the main pool would hold them all).
int window_pool_blocks(const model_config& c, int n_seqs, int chunk_tokens, int block_size, int full_blocks);
// Layers whose cache is in the main pool when there is a window pool (the global ones).
int n_global_layers(const model_config& c);
// Whether layer l has a KV cache of its own: not a hybrid's recurrent layer (its state is in
// state_cache) and not a KV-shared layer (model_config::kv_source_layer(l) != l: it attends
// over its source's cache). kv_cache::layer(l) of any other layer holds tensors of no elements.
bool layer_owns_kv(const model_config& c, int l);
// Layers with a KV cache of their own (layer_owns_kv).
int n_kv_layers(const model_config& c);
// The cache's bytes per token at element type `type`: K and V rows of every layer that owns a
// KV cache, each row layer_kv_width(l) wide (per-layer head shapes, gemma4), split by pool:
// with `window_pool` the sliding-window layers' rows count in `window`, else in `main`.
// widest_row: the widest single K (or V) row in bytes.
struct kv_token_bytes {
  uint64_t main = 0, window = 0, widest_row = 0;
};
kv_token_bytes kv_bytes_per_token(const model_config& c, gpu::dtype type, bool window_pool);

struct layer_cache {
  gpu::tensor k, v;  // {Hkv_l*D_l, n_slots}; {0, 0} for a layer without KV
};

// The blocks of one sequence, in position order: position p lives in blocks[p / B].
struct kv_sequence {
  std::vector<int32_t> blocks;
};

class kv_cache {
 public:
  // errc::out_of_memory from the backend if the pool does not fit.
  static result<kv_cache> create(gpu::backend& be, const model_config& c, int n_blocks,
                                 gpu::dtype type = gpu::dtype::f32, int block_size = 16, int n_window_blocks = 0);

  int block_size() const { return block_size_; }
  int n_blocks() const { return n_blocks_; }
  int n_free() const { return static_cast<int>(free_.size()); }
  gpu::dtype type() const { return type_; }
  const layer_cache& layer(int l) const { return layers_[static_cast<size_t>(l)]; }
  int n_layers() const { return static_cast<int>(layers_.size()); }
  // The window pool's size in blocks (0: none) and its window in positions.
  int n_window_blocks() const { return n_window_blocks_; }
  int window() const { return window_; }
  // Whether layer l's cache is in the window pool (indexed by the window table).
  bool in_window_pool(int l) const { return n_window_blocks_ > 0 && window_layer_[static_cast<size_t>(l)]; }

  std::optional<int32_t> alloc_block();
  void free_block(int32_t b);

  // Grows `s` to hold positions [0, n_tokens). errc::out_of_memory (and `s` unchanged)
  // if the pool has too few free blocks.
  result<void> reserve(kv_sequence& s, int n_tokens);
  // Returns all of `s`'s blocks to the pool.
  void release(kv_sequence& s);

 private:
  std::vector<layer_cache> layers_;
  std::vector<int32_t> free_;  // LIFO
  std::vector<uint8_t> used_;
  std::vector<uint8_t> window_layer_;
  int n_blocks_ = 0;
  int n_window_blocks_ = 0;
  int window_ = 0;
  int block_size_ = 16;
  gpu::dtype type_ = gpu::dtype::f32;
};

}  // namespace vks::model
