// Element types the kernels run, with GGUF (ggml) block layouts. Sizes are facts of the
// GGUF format: a row of K elements of a block type is K/block_elems blocks of block_bytes.
//   f32, f16, bf16: plain little-endian scalars
//   q8_0 : 32 elems, 34 B = f16 d, int8 q[32];            x = d*q
//   q4_0 : 32 elems, 18 B = f16 d, uint8 qs[16];          x = d*(nibble-8); low nibbles are
//          elements 0..15, high nibbles 16..31
//   q4_K : 256 elems, 144 B = f16 d, f16 dmin, uint8 scales[12] (8 6-bit scale/min pairs),
//          uint8 qs[128];  x = d*sc*q - dmin*m per 32-element sub-block
//   q6_K : 256 elems, 210 B = uint8 ql[128], uint8 qh[64], int8 scales[16], f16 d;
//          x = d*scale*(q6-32) per 16-element sub-block
//   i32  : index/parameter tensors (token ids, positions, block tables)
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace vks::gpu {

enum class dtype : uint8_t { f32, f16, bf16, q8_0, q4_0, q4_K, q6_K, i32 };

struct dtype_traits {
  std::string_view name;
  uint32_t block_elems;  // elements per block (1 for scalars)
  uint32_t block_bytes;  // bytes per block
  uint32_t ggml_id;      // ggml type id in GGUF files
};

constexpr dtype_traits traits(dtype t) {
  switch (t) {
    case dtype::f32: return {"f32", 1, 4, 0};
    case dtype::f16: return {"f16", 1, 2, 1};
    case dtype::bf16: return {"bf16", 1, 2, 30};
    case dtype::q8_0: return {"q8_0", 32, 34, 8};
    case dtype::q4_0: return {"q4_0", 32, 18, 2};
    case dtype::q4_K: return {"q4_K", 256, 144, 12};
    case dtype::q6_K: return {"q6_K", 256, 210, 14};
    case dtype::i32: return {"i32", 1, 4, 26};
  }
  return {"?", 1, 1, 0};
}

// Bytes of a row of n elements (n must be a multiple of the block size).
constexpr uint64_t row_bytes(dtype t, uint64_t n) {
  auto tr = traits(t);
  return n / tr.block_elems * tr.block_bytes;
}

inline std::optional<dtype> dtype_from_ggml(uint32_t id) {
  for (auto t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q8_0, dtype::q4_0, dtype::q4_K, dtype::q6_K, dtype::i32})
    if (traits(t).ggml_id == id) return t;
  return std::nullopt;
}

}  // namespace vks::gpu
