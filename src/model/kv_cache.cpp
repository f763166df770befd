// kv_cache: pool allocation on the backend and the free-list block allocator.
// Cache types (--kv-cache-dtype): f32, f16, or q8_0: each row (one token's Hkv*D values) as
// llama.cpp's block_q8_0 rows (f16 d, int8 q[32], 34 bytes per 32 values), blocks along the
// head dimension, so every KV layer's head dim % 32 == 0 (else create() refuses:
// invalid_argument). The
// tensors are named k_cache.<l> / v_cache.<l>: gpu/vk keeps tensors of those names in
// GGUF blocks (never its planar weight layout) with 4 spare bytes for its word accesses.
#include "model/kv_cache.hpp"

#include <algorithm>
#include <string>

namespace vks::model {

result<gpu::dtype> kv_cache_dtype(std::string_view option, const gpu::device_info& dev) {
  if (option == "f32") return gpu::dtype::f32;
  if (option == "f16") return gpu::dtype::f16;
  if (option == "q8_0") return gpu::dtype::q8_0;
  if (option != "auto") return fail(errc::invalid_argument, "--kv-cache-dtype must be auto, f32, f16 or q8_0");
  // auto: f16 on GPUs, f32 on CPU devices and the reference backend (matches llama2.c).
  return dev.kind == "cpu" || dev.kind == "ref" ? gpu::dtype::f32 : gpu::dtype::f16;
}

bool layer_owns_kv(const model_config& c, int l) { return !c.is_recurrent_layer(l) && c.kv_source_layer(l) == l; }

int n_kv_layers(const model_config& c) {
  int n = 0;
  for (int l = 0; l < c.n_layer; ++l) n += layer_owns_kv(c, l) ? 1 : 0;
  return n;
}

kv_token_bytes kv_bytes_per_token(const model_config& c, gpu::dtype type, bool window_pool) {
  kv_token_bytes b;
  for (int l = 0; l < c.n_layer; ++l) {
    if (!layer_owns_kv(c, l)) continue;
    const uint64_t row = gpu::row_bytes(type, static_cast<uint64_t>(c.layer_kv_width(l)));
    b.widest_row = std::max(b.widest_row, row);
    (window_pool && c.is_swa_layer(l) ? b.window : b.main) += 2 * row;
  }
  return b;
}

int n_global_layers(const model_config& c) {
  int n = 0;
  for (int l = 0; l < c.n_layer; ++l) n += c.is_swa_layer(l) ? 0 : 1;
  return n;
}

int window_pool_blocks(const model_config& c, int n_seqs, int chunk_tokens, int block_size, int full_blocks) {
  if (n_global_layers(c) == c.n_layer || c.sliding_window <= 0 || block_size <= 0) return 0;
  const int64_t per_seq = (int64_t{c.sliding_window} - 1) / block_size + 3;  // window, its partial blocks, the next
  const int64_t n = int64_t{n_seqs} * per_seq + (int64_t{chunk_tokens} + block_size - 1) / block_size;
  return static_cast<int>(std::min<int64_t>(n, full_blocks));
}

result<kv_cache> kv_cache::create(gpu::backend& be, const model_config& c, int n_blocks, gpu::dtype type,
                                  int block_size, int n_window_blocks) {
  if (n_window_blocks < 0) return fail(errc::invalid_argument, "kv_cache: window pool size must not be negative");
  bool any_swa = false;
  for (int l = 0; l < c.n_layer; ++l) any_swa = any_swa || c.is_swa_layer(l);
  if (!any_swa) n_window_blocks = 0;  // no sliding-window layer: nothing to put there
  if (n_blocks <= 0 || block_size <= 0) return fail(errc::invalid_argument, "kv_cache: block counts must be positive");
  if (type != gpu::dtype::f32 && type != gpu::dtype::f16 && type != gpu::dtype::q8_0)
    return fail(errc::invalid_argument, "kv_cache: type must be f32, f16 or q8_0");
  for (int l = 0; l < c.n_layer; ++l)
    if (type == gpu::dtype::q8_0 && layer_owns_kv(c, l) && c.layer_head_dim(l) % 32 != 0)
      return fail(errc::invalid_argument, "--kv-cache-dtype q8_0 needs a head dimension divisible by 32 (q8_0 blocks "
                                          "of 32 along each head); this model's is " + std::to_string(c.layer_head_dim(l)) +
                                          " in layer " + std::to_string(l) + ": use f16 or f32");
  kv_cache kv;
  kv.n_blocks_ = n_blocks;
  kv.block_size_ = block_size;
  kv.type_ = type;
  kv.n_window_blocks_ = n_window_blocks;
  kv.window_ = n_window_blocks > 0 ? c.sliding_window : 0;
  // gpu/vk binds a pool larger than one binding in windows of whole blocks (attention and
  // kv_store address blocks window by window); one block of the widest layer must fit a binding.
  const uint64_t block_bytes = kv_bytes_per_token(c, type, false).widest_row * static_cast<uint64_t>(block_size);
  const uint64_t max_bind = be.info().max_binding_bytes;
  if (max_bind > 0 && block_bytes > max_bind)
    return fail(errc::invalid_argument, "kv_cache: one KV block (" + std::to_string(block_size) + " tokens, " +
                                            std::to_string(block_bytes) + " bytes per layer) exceeds the device's largest "
                                            "binding (" + std::to_string(max_bind) + " bytes, maxStorageBufferRange): "
                                            "use a smaller block size");
  for (int l = 0; l < c.n_layer; ++l) {
    const bool in_window = n_window_blocks > 0 && c.is_swa_layer(l);
    kv.window_layer_.push_back(in_window ? 1 : 0);
    if (!layer_owns_kv(c, l)) {  // a hybrid's DeltaNet layer (state in state_cache) or a KV-shared layer
      layer_cache none;  // no elements, no buffer
      none.k.ne = none.v.ne = {0, 0, 1, 1};
      kv.layers_.push_back(none);
      continue;
    }
    const int64_t row = c.layer_kv_width(l);
    const int64_t layer_slots = int64_t{in_window ? n_window_blocks : n_blocks} * block_size;
    auto k = be.alloc(type, {row, layer_slots, 1, 1}, "k_cache." + std::to_string(l));
    if (!k) return fail(std::move(k).error());
    auto v = be.alloc(type, {row, layer_slots, 1, 1}, "v_cache." + std::to_string(l));
    if (!v) return fail(std::move(v).error());
    kv.layers_.push_back({*k, *v});
  }
  kv.used_.assign(static_cast<size_t>(n_blocks), 0);
  for (int b = n_blocks - 1; b >= 0; --b) kv.free_.push_back(b);
  return kv;
}

std::optional<int32_t> kv_cache::alloc_block() {
  if (free_.empty()) return std::nullopt;
  int32_t b = free_.back();
  free_.pop_back();
  used_[static_cast<size_t>(b)] = 1;
  return b;
}

void kv_cache::free_block(int32_t b) {
  VKS_ASSERT(b >= 0 && b < n_blocks_ && used_[static_cast<size_t>(b)], "freeing a block that is not allocated");
  used_[static_cast<size_t>(b)] = 0;
  free_.push_back(b);
}

result<void> kv_cache::reserve(kv_sequence& s, int n_tokens) {
  const size_t need = static_cast<size_t>((n_tokens + block_size_ - 1) / block_size_);
  if (need <= s.blocks.size()) return ok();
  if (need - s.blocks.size() > free_.size())
    return fail(errc::out_of_memory, "KV cache full: need " + std::to_string(need - s.blocks.size()) + " blocks, " +
                                         std::to_string(free_.size()) + " free");
  while (s.blocks.size() < need) s.blocks.push_back(*alloc_block());
  return ok();
}

void kv_cache::release(kv_sequence& s) {
  for (auto b : s.blocks) free_block(b);
  s.blocks.clear();
}

}  // namespace vks::model
