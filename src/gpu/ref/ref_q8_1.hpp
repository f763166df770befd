// gpu/ref's twin of the q8_1 activation path (#20; gpu/vk's quantize_q8_1.comp and
// matvec_q8_1.comp): activations quantized per 32 elements to ggml's block_q8_1 (f16 d, f16
// s = d * sum(qs), 32 int8 qs), and each 32-element weight sub-block dotted with them as an
// exact integer sum scaled once: sum_g a_g * isum_g(q, xq) * d + m * s (q: the block's integer
// weights, a_g: the scale of each 16-element half, m: the block's constant offset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "gpu/backend.hpp"

namespace vks::gpu {

constexpr int64_t k_q8_1_block_bytes = 36;  // f16 d, f16 s, int8 qs[32]

// The weight types with an integer-dot kernel (matvec_q8_1.comp).
bool has_q8_1_dot(dtype t);

// Quantizes n (a multiple of 32) floats into n / 32 block_q8_1 (36 bytes each) at dst:
// d = max|x| / 127, qs = round(x / d), s = d * sum(qs), as ggml's quantize_row_q8_1.
void quantize_row_q8_1(const float* x, std::byte* dst, int64_t n);

// The dot product of one weight row (K elements of type t, has_q8_1_dot(t)) with K / 32
// block_q8_1: per sub-block an exact integer sum, accumulated in double.
double vec_dot_q8_1(dtype t, const std::byte* wrow, const std::byte* xq, int64_t K);

// The reference backend that, for matmuls of a has_q8_1_dot type with T <= 8 columns,
// quantizes x to q8_1 and uses vec_dot_q8_1 (the twin of gpu/vk with q8_1 activations on:
// tuning's q8_1 field); everything else as make_ref_backend().
std::unique_ptr<backend> make_ref_backend_q8_1();

}  // namespace vks::gpu
