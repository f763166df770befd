#version 450
// y[t, n] = sum_k w[n, k] * x[t, k]: w {K, N} in any weight dtype (see common/dequant.glsl),
// x {K, T} f32, y {y_stride, T} f32. Used for decode (TB = 1: matvec) and prefill (TB = 8).
// Thread layout: L lanes share one output row n (L = 1 on CPU devices: no barriers; a
// subgroup-sized L on GPUs, variants *_red built with LANES_REDUCE), each thread keeps TB token accumulators so one weight decode
// feeds TB FMAs. Lanes reduce through shared memory, so any subgroup size is correct.
// Workgroup (x, y) covers rows [x*WG/L, ...) and tokens [y*TB, y*TB + TB).
// Reference: src/gpu/ref (matmul).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint L = 1;  // lanes per output row (power of two, divides WG)

layout(std430, binding = 0) readonly buffer W { uint wq[]; };
layout(std430, binding = 0) readonly buffer W4 { uvec4 wq4[]; };  // same buffer, 16-byte loads
#define HAVE_WQ4
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };  // same buffer, 16-byte loads
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { push_matmul p; };

#include "../common/dequant.glsl"

#ifdef LANES_REDUCE
shared float red[256 * TB];
#endif

void main() {
  const uint lid = gl_LocalInvocationID.x, lane = lid % L;
  const uint row = gl_WorkGroupID.x * (gl_WorkGroupSize.x / L) + lid / L;
  const uint t0 = gl_WorkGroupID.y * TB;
  uint xb[TB];  // x row starts (words); rows past T repeat the last one, results dropped
  for (uint t = 0u; t < TB; ++t) xb[t] = (p.x_off >> 2) + min(t0 + t, p.T - 1u) * p.K;
  float acc[TB];
  for (uint t = 0u; t < TB; ++t) acc[t] = 0.0;

  if (row < p.N) {
    const uint rowoff = p.w_off + row * p.w_row_bytes;
#if CHUNK == 32
    // x rows 16-byte aligned (the usual case): vec4 loads (4x fewer load instructions,
    // which is what CPU devices pay for); otherwise scalar loads.
    const bool x_vec4 = (p.x_off & 15u) == 0u;
    for (uint c = lane; c < p.K / 32u; c += L) {
      vec4 v[8];
      deq_chunk(rowoff, c, v);
      for (uint t = 0u; t < TB; ++t) {
        uint b = xb[t] + c * 32u;
        float s = 0.0;
        if (x_vec4) {
          for (uint j = 0u; j < 8u; ++j) s += dot(v[j], x4[(b >> 2) + j]);
        } else {
          for (uint j = 0u; j < 8u; ++j)
            s += dot(v[j], vec4(x[b + 4u * j], x[b + 4u * j + 1u], x[b + 4u * j + 2u], x[b + 4u * j + 3u]));
        }
        acc[t] += s;
      }
    }
#else
    const bool x_vec4 = (p.x_off & 15u) == 0u && (p.K & 3u) == 0u;
    for (uint c = lane; c < p.K / 4u; c += L) {
      vec4 v = deq4(rowoff, 4u * c);
      for (uint t = 0u; t < TB; ++t) {
        uint b = xb[t] + 4u * c;
        acc[t] += dot(v, x_vec4 ? x4[b >> 2] : vec4(x[b], x[b + 1u], x[b + 2u], x[b + 3u]));
      }
    }
    for (uint e = (p.K & ~3u) + lane; e < p.K; e += L) {
      float v = deq1(rowoff, e);
      for (uint t = 0u; t < TB; ++t) acc[t] += v * x[xb[t] + e];
    }
#endif
  }

#ifdef LANES_REDUCE
  if (L > 1u) {
    for (uint t = 0u; t < TB; ++t) red[lid * TB + t] = acc[t];
    for (uint s = L / 2u; s > 0u; s >>= 1) {
      barrier();
      if (lane < s)
        for (uint t = 0u; t < TB; ++t) red[lid * TB + t] += red[(lid + s) * TB + t];
    }
    barrier();
    for (uint t = 0u; t < TB; ++t) acc[t] = red[lid * TB + t];
  }
#endif
  if (lane == 0u && row < p.N)
    for (uint t = 0u; t < TB && t0 + t < p.T; ++t) y[(p.y_off >> 2) + (t0 + t) * p.y_stride + row] = acc[t];
}
