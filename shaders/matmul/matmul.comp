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

#ifndef LANES_REDUCE
// CPU devices (lavapipe): one invocation computes R rows x TB tokens with no barriers. Every
// storage-buffer load costs a per-lane scalar loop there, so a chunk of each weight row is
// decoded once into registers and each x chunk is loaded once and used for all R rows:
// loads per chunk = R * (weight words) + TB * CHUNK instead of R * TB * CHUNK.
layout(constant_id = 2) const uint R = 1;  // rows per invocation

void main() {
  const uint row0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * R;
  const uint t0 = gl_WorkGroupID.y * TB;
  if (row0 >= p.N) return;
  uint xb[TB];  // x row starts (words); rows past T repeat the last one, results dropped
  for (uint t = 0u; t < TB; ++t) xb[t] = (p.x_off >> 2) + min(t0 + t, p.T - 1u) * p.K;
  uint ro[R];   // weight row starts (bytes); rows past N repeat the last one, results dropped
  for (uint r = 0u; r < R; ++r) ro[r] = p.w_off + min(row0 + r, p.N - 1u) * p.w_row_bytes;
  float acc[R * TB];
  for (uint i = 0u; i < R * TB; ++i) acc[i] = 0.0;
#if CHUNK == 32
  const bool x_vec4 = (p.x_off & 15u) == 0u;
  vec4 wv[R * 8u];
  for (uint c = 0u; c < p.K / 32u; ++c) {
    for (uint r = 0u; r < R; ++r) {
      vec4 v[8];
      deq_chunk(ro[r], c, v);
      for (uint j = 0u; j < 8u; ++j) wv[r * 8u + j] = v[j];
    }
    for (uint t = 0u; t < TB; ++t) {
      const uint b = xb[t] + c * 32u;
      vec4 xv[8];
      if (x_vec4) {
        for (uint j = 0u; j < 8u; ++j) xv[j] = x4[(b >> 2) + j];
      } else {
        for (uint j = 0u; j < 8u; ++j) xv[j] = vec4(x[b + 4u * j], x[b + 4u * j + 1u], x[b + 4u * j + 2u], x[b + 4u * j + 3u]);
      }
      for (uint r = 0u; r < R; ++r) {
        float s = 0.0;
        for (uint j = 0u; j < 8u; ++j) s += dot(wv[r * 8u + j], xv[j]);
        acc[r * TB + t] += s;
      }
    }
  }
#else
  const bool x_vec4 = (p.x_off & 15u) == 0u && (p.K & 3u) == 0u;
  vec4 wv[R];
  for (uint c = 0u; c < p.K / 4u; ++c) {
    for (uint r = 0u; r < R; ++r) wv[r] = deq4(ro[r], 4u * c);
    for (uint t = 0u; t < TB; ++t) {
      const uint b = xb[t] + 4u * c;
      const vec4 xv = x_vec4 ? x4[b >> 2] : vec4(x[b], x[b + 1u], x[b + 2u], x[b + 3u]);
      for (uint r = 0u; r < R; ++r) acc[r * TB + t] += dot(wv[r], xv);
    }
  }
  for (uint e = p.K & ~3u; e < p.K; ++e) {
    for (uint r = 0u; r < R; ++r) {
      const float v = deq1(ro[r], e);
      for (uint t = 0u; t < TB; ++t) acc[r * TB + t] += v * x[xb[t] + e];
    }
  }
#endif
  for (uint r = 0u; r < R && row0 + r < p.N; ++r)
    for (uint t = 0u; t < TB && t0 + t < p.T; ++t) y[(p.y_off >> 2) + (t0 + t) * p.y_stride + row0 + r] = acc[r * TB + t];
}
#else
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
#endif
