// Host-side (de)quantisation of rows in the GGUF block formats listed in gpu/dtype.hpp.
// Used by gpu/ref (the oracle), by the test-model generator and by tests. Pure functions,
// thread-safe. n must be a multiple of the type's block size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/dtype.hpp"

namespace vks::gpu {

// dst receives row_bytes(t, n) bytes encoding src[0..n).
void quantize_row(dtype t, const float* src, std::byte* dst, int64_t n);
// dst receives n floats decoded from row_bytes(t, n) bytes at src.
void dequantize_row(dtype t, const std::byte* src, float* dst, int64_t n);

// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t h);

}  // namespace vks::gpu
