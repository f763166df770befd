#version 450
// y[t, n] = sum_k w[n, k] * x[t, k] on CPU devices (lavapipe), reading w and x through uniform
// texel buffers. w {K, N}: f32, f16 (rows as stored) or q8_0 in the backend's planar layout
// (quants plane: N rows of K int8; then scales plane: N * K/32 f32); x {K, T} f32; y {y_stride, T} (binding 0).
// Why texels: lavapipe turns a storage-buffer load into a per-lane scalar loop with a bounds
// check and a branch per component, while a texel fetch of a 16-byte format is a plain load per
// lane and a 4x8 transpose. With this kernel a q8_0 matvec runs ~5x faster than matmul.comp's
// CPU path there. Not used on GPUs (matmul.comp *_red variants).
// Thread layout: one invocation computes R rows x TB tokens; no barriers, no subgroup
// operations (correct for any subgroup size). Workgroup (x, y) covers rows
// [x * WG * R, ...) and tokens [y * TB, y * TB + TB). Rows past N and tokens past T are
// computed on the last row/token and dropped.
// Register budget: lavapipe keeps every scalar of an invocation in a SIMD register (one lane
// per invocation), so vec4 arrays cost 4 registers per element. TB == 1 (MATVEC): the 16 x
// values of a texel are loaded once per chunk and reused for R rows, the q8_0 scale is applied
// once per block (acc += d * sum); TB > 1: each weight word is decoded once (scale applied)
// and used for TB tokens.
// Reference: src/gpu/ref (matmul).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 2) const uint R = 1;   // rows per invocation
layout(constant_id = 4) const uint TB = 1;  // tokens per invocation (1 for MATVEC variants)

layout(std430, binding = 0) writeonly buffer Y { float y[]; };
layout(binding = 8) uniform usamplerBuffer wt;  // w, 16-byte texels
layout(binding = 9) uniform samplerBuffer xt;   // x, vec4 texels
layout(binding = 10) uniform samplerBuffer st;  // q8_0 scales (same buffer as w), float texels
layout(push_constant) uniform P { push_matmul_texel p; };

vec4 s8x4(uint u) {
  return vec4(bitfieldExtract(int(u), 0, 8), bitfieldExtract(int(u), 8, 8), bitfieldExtract(int(u), 16, 8),
              bitfieldExtract(int(u), 24, 8));
}

// Weights per texel (WPT) and texels per chunk (TPC); a chunk is 32 weights for q8_0 (one
// scale), one texel otherwise.
#if defined(TYPE_Q8_0)
#define WPT 16u
#define TPC 2u
#elif defined(TYPE_F16)
#define WPT 8u
#define TPC 1u
#else
#define WPT 4u
#define TPC 1u
#endif

// Weights [4j, 4j + 4) of texel u (unscaled for q8_0); j < WPT / 4.
vec4 decode(uvec4 u, uint j) {
#if defined(TYPE_Q8_0)
  return s8x4(u[j]);
#elif defined(TYPE_F16)
  return j == 0u ? vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)) : vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));
#else
  return uintBitsToFloat(u);
#endif
}

void main() {
  const uint row0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * R;
  const uint t0 = gl_WorkGroupID.y * TB;
  const uint KT = p.K / WPT;  // texels per row
  uint wr[R];                 // texel index of each row's start
  [[unroll]] for (uint r = 0u; r < R; ++r) wr[r] = p.w_base + min(row0 + r, p.N - 1u) * KT;
  uint xr[TB];                // texel index of each token's x row
  [[unroll]] for (uint t = 0u; t < TB; ++t) xr[t] = p.x_base + min(t0 + t, p.T - 1u) * (p.K / 4u);
  float acc[R * TB];
  [[unroll]] for (uint i = 0u; i < R * TB; ++i) acc[i] = 0.0;

  for (uint c = 0u; c < KT / TPC; ++c) {
#if defined(TYPE_Q8_0)
    float d[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) d[r] = texelFetch(st, int(p.s_base + min(row0 + r, p.N - 1u) * (p.K / 32u) + c)).x;
#endif
#ifdef MATVEC
    float part[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) part[r] = 0.0;
    [[unroll]] for (uint h = 0u; h < TPC; ++h) {
      const uint k4 = (c * TPC + h) * (WPT / 4u);  // x texel of this weight texel
      vec4 xv[WPT / 4u];
      [[unroll]] for (uint j = 0u; j < WPT / 4u; ++j) xv[j] = texelFetch(xt, int(xr[0] + k4 + j));
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uvec4 u = texelFetch(wt, int(wr[r] + c * TPC + h));
        [[unroll]] for (uint j = 0u; j < WPT / 4u; ++j) part[r] += dot(decode(u, j), xv[j]);
      }
    }
#if defined(TYPE_Q8_0)
    [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] += d[r] * part[r];
#else
    [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] += part[r];
#endif
#else
    [[unroll]] for (uint h = 0u; h < TPC; ++h) {
      const uint k4 = (c * TPC + h) * (WPT / 4u);
      uvec4 u[R];
      [[unroll]] for (uint r = 0u; r < R; ++r) u[r] = texelFetch(wt, int(wr[r] + c * TPC + h));
      [[unroll]] for (uint j = 0u; j < WPT / 4u; ++j) {
        vec4 wv[R];  // weights k4+j of each row, scaled
        [[unroll]] for (uint r = 0u; r < R; ++r) {
#if defined(TYPE_Q8_0)
          wv[r] = decode(u[r], j) * d[r];
#else
          wv[r] = decode(u[r], j);
#endif
        }
        [[unroll]] for (uint t = 0u; t < TB; ++t) {
          const vec4 xv = texelFetch(xt, int(xr[t] + k4 + j));
          [[unroll]] for (uint r = 0u; r < R; ++r) acc[r * TB + t] += dot(wv[r], xv);
        }
      }
    }
#endif
  }
  [[unroll]] for (uint r = 0u; r < R; ++r)
    [[unroll]] for (uint t = 0u; t < TB; ++t)
      if (row0 + r < p.N && t0 + t < p.T) y[(p.y_off >> 2) + (t0 + t) * p.y_stride + row0 + r] = acc[r * TB + t];
}
