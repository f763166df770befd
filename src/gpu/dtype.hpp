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
//   q4_1 : 32 elems, 20 B = f16 d, f16 m, uint8 qs[16];   x = d*nibble + m (nibbles as q4_0)
//   q5_0 : 32 elems, 22 B = f16 d, uint32 qh, uint8 qs[16]; x = d*((nibble | bit_e(qh)<<4) - 16)
//   q5_1 : 32 elems, 24 B = f16 d, f16 m, uint32 qh, qs[16]; x = d*(nibble | bit_e(qh)<<4) + m
//   q2_K : 256 elems, 84 B = uint8 scales[16] (lo 4 bits scale, hi 4 bits min), uint8 qs[64],
//          f16 d, f16 dmin;  x = d*sc*q2 - dmin*m per 16-element sub-block
//   q3_K : 256 elems, 110 B = uint8 hmask[32], uint8 qs[64], uint8 scales[12] (16 6-bit),
//          f16 d;  x = d*(sc-32)*(q2 - (hmask bit ? 0 : 4)) per 16-element sub-block
//   q5_K : 256 elems, 176 B = f16 d, f16 dmin, scales[12] (as q4_K), uint8 qh[32],
//          uint8 qs[128];  x = d*sc*(nibble | hbit<<4) - dmin*m per 32-element sub-block
//   iq4_nl: 32 elems, 18 B = f16 d, uint8 qs[16];  x = d*kvalues_iq4nl[nibble]
//   iq4_xs: 256 elems, 136 B = f16 d, uint16 scales_h, uint8 scales_l[4], uint8 qs[128];
//          x = d*(ls-32)*kvalues_iq4nl[nibble], ls 6 bits per 32-element sub-block
//   mxfp4: 32 elems, 17 B = uint8 e (E8M0), uint8 qs[16];  x = 2^(e-128)*kvalues_mxfp4[nibble]
//   The grid i-quants (gpu/quant_iq.cpp; grids: gpu/iq_grids.hpp). A 32-element sub-block
//   is 4 groups of 8; a group is one 8-element grid point (iq3: two 4-element points) times
//   8 signs (ksigns: 7 bits + parity); db is the sub-block scale:
//   iq3_xxs: 256 elems, 98 B = f16 d, uint8 qs[64] (grid indices), uint32 aux[8]: 4x7-bit
//          sign indices + 4-bit ls;  db = d*(0.5+ls)*0.5
//   iq3_s: 256 elems, 110 B = f16 d, qs[64], qh[8] (9th index bits), signs[32] (8 per
//          group), scales[4] (4 bits per 32);  db = d*(1+2*ls)
//   iq2_xxs: 256 elems, 66 B = f16 d, uint32 pairs[8]: 4 grid indices (8 bits), then 4x7-bit
//          sign indices + 4-bit ls;  db = d*(0.5+ls)*0.25
//   iq2_xs: 256 elems, 74 B = f16 d, uint16 qs[32] (9-bit index | 7-bit signs << 9),
//          scales[8] (4 bits per 16);  db = d*(0.5+ls)*0.25
//   iq2_s: 256 elems, 82 B = f16 d, qs[32] (index low 8), signs[32], qh[8] (index bits 8-9),
//          scales[8] (4 bits per 16);  db = d*(0.5+ls)*0.25
//   iq1_s: 256 elems, 50 B = f16 d, qs[32] (index low 8), uint16 qh[8] (3 index bits per
//          group, 3-bit ls, delta sign);  x = d*(2ls+1)*(grid +- 1/8)
//   iq1_m: 256 elems, 56 B = qs[32], qh[16] (3 index bits + delta sign per group),
//          scales[8] (3-bit ls per 16; f16 d in the top nibbles of the 4 uint16);  as iq1_s
//   (the per-element bit positions are spelled out in gpu/quant_k.cpp / gpu/quant.cpp)
//   i32  : index/parameter tensors (token ids, positions, block tables)
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace vks::gpu {

// i32 stays last (arrays indexed by dtype are sized by it).
enum class dtype : uint8_t {
  f32, f16, bf16, q8_0, q4_0, q4_K, q6_K,
  q4_1, q5_0, q5_1, q2_K, q3_K, q5_K, iq4_nl, iq4_xs, mxfp4,
  iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq2_s, iq1_s, iq1_m,
  i32
};

// Every dtype, in enum order (weight types and i32).
constexpr dtype k_all_dtypes[] = {dtype::f32,  dtype::f16,  dtype::bf16, dtype::q8_0,   dtype::q4_0,   dtype::q4_K,
                                  dtype::q6_K, dtype::q4_1, dtype::q5_0, dtype::q5_1,   dtype::q2_K,   dtype::q3_K,
                                  dtype::q5_K, dtype::iq4_nl, dtype::iq4_xs, dtype::mxfp4, dtype::iq3_xxs,
                                  dtype::iq3_s, dtype::iq2_xxs, dtype::iq2_xs, dtype::iq2_s, dtype::iq1_s,
                                  dtype::iq1_m, dtype::i32};

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
    case dtype::q4_1: return {"q4_1", 32, 20, 3};
    case dtype::q5_0: return {"q5_0", 32, 22, 6};
    case dtype::q5_1: return {"q5_1", 32, 24, 7};
    case dtype::q2_K: return {"q2_K", 256, 84, 10};
    case dtype::q3_K: return {"q3_K", 256, 110, 11};
    case dtype::q5_K: return {"q5_K", 256, 176, 13};
    case dtype::iq4_nl: return {"iq4_nl", 32, 18, 20};
    case dtype::iq4_xs: return {"iq4_xs", 256, 136, 23};
    case dtype::mxfp4: return {"mxfp4", 32, 17, 39};
    case dtype::iq3_xxs: return {"iq3_xxs", 256, 98, 18};
    case dtype::iq3_s: return {"iq3_s", 256, 110, 21};
    case dtype::iq2_xxs: return {"iq2_xxs", 256, 66, 16};
    case dtype::iq2_xs: return {"iq2_xs", 256, 74, 17};
    case dtype::iq2_s: return {"iq2_s", 256, 82, 22};
    case dtype::iq1_s: return {"iq1_s", 256, 50, 19};
    case dtype::iq1_m: return {"iq1_m", 256, 56, 29};
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
  for (auto t : k_all_dtypes)
    if (traits(t).ggml_id == id) return t;
  return std::nullopt;
}

}  // namespace vks::gpu
