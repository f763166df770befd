#version 450
// y[t, n] = sum_k w[n, k] * x[t, k] on CPU devices (lavapipe), reading w and x through uniform
// texel buffers. w {K, N}: f32, f16 (rows as stored) or q8_0 in the backend's planar layout
// (quants plane: N rows of K int8; then the scales plane, f32, block b of row n at b * Np + n,
// Np = N rounded up to 16, read 4 rows per texel); x {K, T} f32; y {y_stride, T} (binding 0).
// Why texels: lavapipe turns a storage-buffer load into a per-lane scalar loop with a bounds
// check and a branch per component, while a texel fetch of a 16-byte format is a plain load per
// lane and a 4x8 transpose (in an out-of-line call). On SmolLM2-135M q8_0 this kernel made
// prefill 6.6x and decode 2x faster than matmul.comp's CPU path (docs/BENCHMARKS.md). Not used
// on GPUs (matmul.comp *_red variants).
// Thread layout: one invocation computes R rows x TB tokens; no barriers, no subgroup
// operations (correct for any subgroup size). Workgroup (x, y) covers rows
// [x * WG * R, ...) and tokens [y * TB, y * TB + TB). Invocations whose rows all lie past N
// return at once; other rows past N and tokens past T are computed on the last row/token
// (q8_0 scales: on the zero padding) and dropped.
// Per chunk (32 weights of a row for q8_0, one texel otherwise): fetch every texel first,
// then compute with explicit fma (lavapipe does not contract a*b+c by itself).
// MATVEC variants are the same code with TB = 1. Output modes (split outputs + bias, SwiGLU
// over stacked gate/up rows): common/matmul_out.glsl.
// Reference: src/gpu/ref (matmul).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 2) const uint R = 4;   // rows per invocation (q8_0: 4, 8 or 16, dividing Np's 16)
layout(constant_id = 4) const uint TB = 1;  // tokens per invocation (1 for MATVEC variants)

layout(std430, binding = 0) writeonly buffer Y { float y[]; };
layout(std430, binding = 1) writeonly buffer Y2 { float y2[]; };   // split outputs
layout(std430, binding = 2) writeonly buffer Y3 { float y3[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
layout(binding = 8) uniform usamplerBuffer wt;  // w, 16-byte texels
layout(binding = 9) uniform samplerBuffer xt;   // x, vec4 texels
layout(push_constant) uniform P { push_matmul_texel p; };

#include "../common/matmul_out.glsl"

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
#define XPT (WPT / 4u)  // x texels (vec4) per weight texel

// Register tile of the compute phase: RB rows x TBB tokens, 4 or 8 partial sums (R is a
// multiple of 4; TB is 1, 2, 4 or 8).
const uint RB = TB == 1u ? 4u : 2u;
const uint TBB = TB < 4u ? TB : 4u;

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
  // SwiGLU (matmul_out.glsl): R/2 features per invocation, each a gate row and an up row.
  const bool sw = mm_swiglu();
  const uint row0 = (mm_tile() * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * (sw ? R / 2u : R);
  const uint t0 = gl_WorkGroupID.y * TB;
  // So row0 + R <= Np (SwiGLU: the host keeps F a multiple of R/2 and of 4): the scale
  // texels below stay in the plane.
  if (row0 >= mm_limit()) return;
  const uint KT = p.K / WPT;  // texels per row
  uint wr[R];                 // texel index of each row's start
  [[unroll]] for (uint r = 0u; r < R; ++r) wr[r] = p.w_base + mm_row(row0, r, R) * KT;
  uint xr[TB];                // texel index of each token's x row
  [[unroll]] for (uint t = 0u; t < TB; ++t) xr[t] = p.x_base + min(t0 + t, p.T - 1u) * (p.K / 4u);
  float acc[R * TB];
  [[unroll]] for (uint i = 0u; i < R * TB; ++i) acc[i] = 0.0;

  for (uint c = 0u; c < KT / TPC; ++c) {
    // Fetch phase: every texel the chunk needs, before any arithmetic. On lavapipe a texel
    // fetch is an out-of-line call that clobbers every vector register, so whatever is live
    // across one is spilled; fetching first keeps the arithmetic below free of calls.
    uvec4 u[R * TPC];             // row r's texels of this chunk
    vec4 xv[TB * TPC * XPT];      // token t's x values of this chunk
#if defined(TYPE_Q8_0)
    vec4 d[R / 4u];  // scales of the invocation's rows, 4 per texel (SwiGLU: gate rows, then up rows)
    const uint sb = c * ((p.N + 15u) & ~15u);
    [[unroll]] for (uint i = 0u; i < R / 4u; ++i) {
      const uint at = sw && i >= R / 8u ? sb + p.n1 + row0 + 4u * (i - R / 8u) : sb + row0 + 4u * i;
      d[i] = uintBitsToFloat(texelFetch(wt, int(p.s_base + at / 4u)));
    }
#endif
    [[unroll]] for (uint r = 0u; r < R; ++r)
      [[unroll]] for (uint h = 0u; h < TPC; ++h) u[r * TPC + h] = texelFetch(wt, int(wr[r] + c * TPC + h));
    [[unroll]] for (uint t = 0u; t < TB; ++t)
      [[unroll]] for (uint j = 0u; j < TPC * XPT; ++j) xv[t * TPC * XPT + j] = texelFetch(xt, int(xr[t] + c * TPC * XPT + j));
    // Compute phase: each weight is decoded once and used for TB tokens; the q8_0 scale is
    // applied once per (row, token, block). The products go in register tiles of RB rows x
    // TBB tokens (8 partial sums): per weight index, RB + TBB operand loads feed RB * TBB fmas.
    // On lavapipe every shader value is a whole SIMD register and the chunk's operands live
    // in spill slots, so a one-sum-at-a-time order (two loads per fma) was load-bound.
    [[unroll]] for (uint r = 0u; r < R; r += RB) {
      vec4 w[RB * TPC * XPT];
      [[unroll]] for (uint rr = 0u; rr < RB; ++rr)
        [[unroll]] for (uint h = 0u; h < TPC; ++h)
          [[unroll]] for (uint j = 0u; j < XPT; ++j) w[(rr * TPC + h) * XPT + j] = decode(u[(r + rr) * TPC + h], j);
      [[unroll]] for (uint t = 0u; t < TB; t += TBB) {
        float part[RB * TBB];
        [[unroll]] for (uint i = 0u; i < RB * TBB; ++i) part[i] = 0.0;
        [[unroll]] for (uint j = 0u; j < TPC * XPT; ++j)
          [[unroll]] for (uint e = 0u; e < 4u; ++e)
            [[unroll]] for (uint rr = 0u; rr < RB; ++rr)
              [[unroll]] for (uint tt = 0u; tt < TBB; ++tt)
                part[rr * TBB + tt] = fma(w[rr * TPC * XPT + j][e], xv[(t + tt) * TPC * XPT + j][e], part[rr * TBB + tt]);
        [[unroll]] for (uint rr = 0u; rr < RB; ++rr)
          [[unroll]] for (uint tt = 0u; tt < TBB; ++tt) {
#if defined(TYPE_Q8_0)
            acc[(r + rr) * TB + t + tt] = fma(d[(r + rr) / 4u][(r + rr) % 4u], part[rr * TBB + tt], acc[(r + rr) * TB + t + tt]);
#else
            acc[(r + rr) * TB + t + tt] += part[rr * TBB + tt];
#endif
          }
      }
    }
  }
  if (sw) {
    [[unroll]] for (uint r = 0u; r < R / 2u; ++r)
      [[unroll]] for (uint t = 0u; t < TB; ++t)
        if (row0 + r < p.n1 && t0 + t < p.T) mm_store_swiglu(t0 + t, row0 + r, acc[r * TB + t], acc[(r + R / 2u) * TB + t]);
    return;
  }
  [[unroll]] for (uint r = 0u; r < R; ++r)
    [[unroll]] for (uint t = 0u; t < TB; ++t)
      if (row0 + r < p.N && t0 + t < p.T) mm_store(t0 + t, row0 + r, acc[r * TB + t]);
}
