#version 450
// y[t, n] = sum_k w[n, k] * x[t, k]: w {K, N} in any weight dtype (see common/dequant.glsl),
// x {K, T} f32, y {y_stride, T} f32. Used for decode (TB = 1: matvec) and prefill (TB = 8).
// Thread layout: L lanes share one output row n (L = 1 on CPU devices: no barriers; a
// subgroup-sized L on GPUs, variants *_red built with LANES_REDUCE), each thread keeps TBS token accumulators so one weight decode
// feeds TBS FMAs. Lanes reduce through shared memory (or subgroupAdd, SG_REDUCE below), so any
// subgroup size is correct.
// Workgroup (x, y) covers rows [x*WG/L, ...) and tokens [y*TBS, y*TBS + TBS) (TBS <= TB: a
// spec constant on CPU devices; the lane-reducing builds stop their token loops at T, so
// 2-7 columns cost their own loads and FMAs without a pipeline per batch size).
// Output modes (split outputs + bias, SwiGLU over stacked gate/up rows, accumulate):
// common/matmul_out.glsl. Norm prologue (LANES_REDUCE builds, push flags bit 2): each
// workgroup first reduces its TB tokens' sums of squares over all of x's K columns, then
// computes with w[n, k] * g[k] and scales its sums by 1/sqrt(mean(x^2) + eps): the result is
// the matmul of rms_norm(x) * g, with no normed copy of x written or read.
// MUL_MAT_ID (matvec only, TB = 1): the experts' grouped matmul (gpu::backend::matmul_id):
// "token" r of the dispatch is a (token, slot) row whose weights start at expert ids[r]'s
// matrix and whose x row is r / x_div (x_div = k: a token's input shared by its k slots);
// no norm prologue there (no norm weight bound: binding 7 is the i-quant grids').
// Reference: src/gpu/ref (matmul, matmul_id, matmul_id_swiglu).
// SG_REDUCE (with LANES_REDUCE; the *_sg kernels, for devices with subgroup arithmetic):
// where a lane group spans whole subgroups (L >= gl_SubgroupSize) its sums are reduced by
// subgroupAdd and only one partial per subgroup goes through shared memory; a smaller L (a
// device whose subgroups hold several rows) reduces through shared memory as *_red does.
#extension GL_GOOGLE_include_directive : require
#ifndef LANES_REDUCE
#extension GL_KHR_shader_subgroup_ballot : require  // subgroupBroadcast (XB below)
#endif
#ifdef SG_REDUCE
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "../common/push.glsl"
#define MM_ACCUMULATE  // matmul_out.glsl: y += result (y is read-write here)

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint L = 1;  // lanes per output row (power of two, divides WG)
// Tokens per invocation: TB (the build's), or fewer so a small batch (2-7 tokens, e.g. a
// few sequences decoding together) does not compute TB tokens and drop the rest.
layout(constant_id = 4) const uint TBS = TB;

layout(std430, binding = 0) readonly buffer W { uint wq[]; };
layout(std430, binding = 0) readonly buffer W4 { uvec4 wq4[]; };  // same buffer, 16-byte loads
#define HAVE_WQ4
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };  // same buffer, 16-byte loads
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) writeonly buffer Y2 { float y2[]; };  // split outputs
layout(std430, binding = 4) writeonly buffer Y3 { float y3[]; };
layout(std430, binding = 5) readonly buffer Bias { float bias[]; };
#ifdef MUL_MAT_ID
layout(std430, binding = 6) readonly buffer Ids { int ids[]; };
layout(push_constant) uniform P { push_matmul_id p; };
// Row r's expert (clamped to [0, n_exp)), x row and the byte offset of its expert's matrix in
// the bound window; mm_row_here: whether this dispatch's window holds row r's expert (an
// expert tensor larger than one binding is multiplied by several dispatches, one per window).
uint mm_expert(uint r) { return min(uint(ids[(p.ids_off >> 2) + r]), p.n_exp - 1u); }
bool mm_row_here(uint r) { return mm_expert(r) - p.e0 < p.e_n; }
uint mm_x_row(uint r) { return r / p.x_div; }
uint mm_w_base(uint r) { return p.w_off + (mm_expert(r) - p.e0) * p.e_bytes; }
#else
layout(std430, binding = 6) readonly buffer G { float g[]; };  // norm weight (flags bit 2)
layout(push_constant) uniform P { push_matmul p; };
bool mm_row_here(uint t) { return true; }
uint mm_x_row(uint t) { return t; }
uint mm_w_base(uint t) { return p.w_off; }
#endif

#include "../common/dequant.glsl"
#include "../common/matmul_out.glsl"

#ifdef LANES_REDUCE
shared float red[256 * TB];
#ifdef MUL_MAT_ID
bool mm_norm() { return false; }
vec4 gnorm4(uint k) { return vec4(1.0); }
float gnorm1(uint k) { return 1.0; }
#else
bool mm_norm() { return (p.flags & 4u) != 0u; }
vec4 gnorm4(uint k) {  // g[k .. k + 3]
  const uint o = (p.g_off >> 2) + k;
  return vec4(g[o], g[o + 1u], g[o + 2u], g[o + 3u]);
}
float gnorm1(uint k) { return g[(p.g_off >> 2) + k]; }
#endif
// Norm prologue: 1/sqrt(mean(x[t]^2) + eps) for the workgroup's tn tokens (the others' sums
// stay 0). Needs a power-of-two workgroup of >= TB invocations (the host checks).
void norm_scales(uint lid, uint xb[TBS], uint tn, out float ns[TBS]) {
  float ss[TBS];
  for (uint t = 0u; t < TBS; ++t) ss[t] = 0.0;
  for (uint e = lid; e < p.K; e += gl_WorkGroupSize.x)
    for (uint t = 0u; t < TBS; ++t) {
      if (t >= tn) break;
      const float v = x[xb[t] + e];
      ss[t] += v * v;
    }
  for (uint t = 0u; t < TBS; ++t) red[lid * TBS + t] = ss[t];
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    barrier();
    if (lid < s)
      for (uint t = 0u; t < TBS; ++t) red[lid * TBS + t] += red[(lid + s) * TBS + t];
  }
  barrier();
  for (uint t = 0u; t < TBS; ++t) ns[t] = inversesqrt(red[t] / float(p.K) + p.eps);
  barrier();  // red[] is the lane reduction's next
}

// Lane group g's total for token t after the reduction: one entry per lane group (at its
// first lane's slot) from the shared-memory tree, or the sum of its L / gl_SubgroupSize
// subgroup partials when the subgroups reduced (sgr).
float group_sum(uint g, uint t, bool sgr) {
  if (!sgr) return red[g * L * TBS + t];
#ifndef SG_REDUCE
  return 0.0;  // not reached: sgr is false without subgroup arithmetic
#else
  const uint n = L / gl_SubgroupSize;
  float s = 0.0;
  for (uint i = 0u; i < n; ++i) s += red[(g * n + i) * TBS + t];
  return s;
#endif
}
#endif

#ifndef LANES_REDUCE
// CPU devices (lavapipe): one invocation computes R rows x TBS tokens with no barriers. Every
// storage-buffer load costs a per-lane scalar loop there, so a chunk of each weight row is
// decoded once into registers and each x chunk is loaded once and used for all R rows:
// loads per chunk = R * (weight words) + TBS * CHUNK instead of R * TBS * CHUNK.
layout(constant_id = 2) const uint R = 1;  // rows per invocation
// XB (q8_0 only; the host sets it where subgroups have >= 8 invocations): x is the same for
// every invocation, so instead of each one loading all 32 x values of a chunk, lane l loads
// the 4 at 4*(l % 8) and the others take them by subgroupBroadcast (a register move on CPU
// devices, where a storage load is a per-lane loop). Needs every invocation active: no
// early return, rows past N are computed on the last row and dropped.
layout(constant_id = 3) const bool XB = false;
void main() {
  // SwiGLU (matmul_out.glsl): R/2 features per invocation, each a gate row and an up row.
  const bool sw = mm_swiglu();
  const uint row0 = (mm_tile() * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * (sw ? R / 2u : R);
  const uint t0 = gl_WorkGroupID.y * TBS;
  if (!XB && row0 >= mm_limit()) return;
  if (!mm_row_here(min(t0, p.T - 1u))) return;  // MUL_MAT_ID (TBS == 1, XB off): another window's expert
  uint xb[TBS];  // x row starts (words); rows past T repeat the last one, results dropped
  for (uint t = 0u; t < TBS; ++t) xb[t] = (p.x_off >> 2) + mm_x_row(min(t0 + t, p.T - 1u)) * p.K;
  uint ro[R];   // weight row starts (bytes); rows past N repeat the last one, results dropped
  const uint wb = mm_w_base(min(t0, p.T - 1u));  // MUL_MAT_ID: TBS == 1
  for (uint r = 0u; r < R; ++r) ro[r] = wb + mm_row(row0, r, R) * p.w_row_bytes;
  float acc[R * TBS];
  for (uint i = 0u; i < R * TBS; ++i) acc[i] = 0.0;
#if defined(TYPE_Q8_0)
  // q8_0 blocks (34 bytes: f16 scale + 32 int8) streamed 4 weights at a time per row, so
  // only R weight vec4s, one x vec4 and the R*TBS accumulators are live (the whole-chunk
  // variant below keeps R*8 vec4s and spills on CPU devices). x is read as vec4 when
  // aligned; an unaligned x falls back to scalar loads.
  const bool x_vec4 = (p.x_off & 15u) == 0u;
  for (uint c = 0u; c < p.K / 32u; ++c) {
    // The 32 quants start 2 bytes into the block, so (blocks being 34 bytes) they are either
    // word-aligned or half-word-aligned, when each 4-byte group straddles two words and is
    // stitched from the previous word's high half and the next word's low half. Only words
    // inside the block are read.
    float d[R];
    uint wi[R], carry[R];
    bool hw[R];  // half-word-aligned
    for (uint r = 0u; r < R; ++r) {
      const uint o = ro[r] + c * 34u;
      d[r] = ldh(o);
      hw[r] = ((o + 2u) & 2u) != 0u;
      wi[r] = (o + 2u) >> 2;
      carry[r] = wq[wi[r]];
    }
    if (XB) {
      vec4 xs[TBS];  // this lane's 4 x values of the chunk, per token
      for (uint t = 0u; t < TBS; ++t) {
        const uint b = xb[t] + c * 32u + 4u * (gl_SubgroupInvocationID & 7u);
        xs[t] = x_vec4 ? x4[b >> 2] : vec4(x[b], x[b + 1u], x[b + 2u], x[b + 3u]);
      }
      // subgroupBroadcast needs a constant lane: the 8 steps are written out.
#define Q8_STEP(J)                                                                  \
      {                                                                             \
        vec4 wv[R];                                                                 \
        for (uint r = 0u; r < R; ++r) {                                             \
          const uint next = wq[wi[r] + J + (hw[r] ? 1u : 0u)];                      \
          wv[r] = s8x4(hw[r] ? (carry[r] >> 16) | (next << 16) : next) * d[r];      \
          carry[r] = next;                                                          \
        }                                                                           \
        for (uint t = 0u; t < TBS; ++t) {                                            \
          const vec4 xv = subgroupBroadcast(xs[t], J);                              \
          for (uint r = 0u; r < R; ++r) acc[r * TBS + t] += dot(wv[r], xv);          \
        }                                                                           \
      }
      Q8_STEP(0u) Q8_STEP(1u) Q8_STEP(2u) Q8_STEP(3u) Q8_STEP(4u) Q8_STEP(5u) Q8_STEP(6u) Q8_STEP(7u)
#undef Q8_STEP
      continue;
    }
    for (uint j = 0u; j < 8u; ++j) {
      vec4 wv[R];
      for (uint r = 0u; r < R; ++r) {
        const uint next = wq[wi[r] + j + (hw[r] ? 1u : 0u)];
        wv[r] = s8x4(hw[r] ? (carry[r] >> 16) | (next << 16) : next) * d[r];
        carry[r] = next;
      }
      for (uint t = 0u; t < TBS; ++t) {
        const uint b = xb[t] + c * 32u + 4u * j;
        const vec4 xv = x_vec4 ? x4[b >> 2] : vec4(x[b], x[b + 1u], x[b + 2u], x[b + 3u]);
        for (uint r = 0u; r < R; ++r) acc[r * TBS + t] += dot(wv[r], xv);
      }
    }
  }
#elif CHUNK == 32
  const bool x_vec4 = (p.x_off & 15u) == 0u;
  vec4 wv[R * 8u];
  for (uint c = 0u; c < p.K / 32u; ++c) {
    for (uint r = 0u; r < R; ++r) {
      vec4 v[8];
      deq_chunk(ro[r], c, v);
      for (uint j = 0u; j < 8u; ++j) wv[r * 8u + j] = v[j];
    }
    for (uint t = 0u; t < TBS; ++t) {
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
        acc[r * TBS + t] += s;
      }
    }
  }
#else
  const bool x_vec4 = (p.x_off & 15u) == 0u && (p.K & 3u) == 0u;
  vec4 wv[R];
  for (uint c = 0u; c < p.K / 4u; ++c) {
    for (uint r = 0u; r < R; ++r) wv[r] = deq4(ro[r], 4u * c);
    for (uint t = 0u; t < TBS; ++t) {
      const uint b = xb[t] + 4u * c;
      const vec4 xv = x_vec4 ? x4[b >> 2] : vec4(x[b], x[b + 1u], x[b + 2u], x[b + 3u]);
      for (uint r = 0u; r < R; ++r) acc[r * TBS + t] += dot(wv[r], xv);
    }
  }
  for (uint e = p.K & ~3u; e < p.K; ++e) {
    for (uint r = 0u; r < R; ++r) {
      const float v = deq1(ro[r], e);
      for (uint t = 0u; t < TBS; ++t) acc[r * TBS + t] += v * x[xb[t] + e];
    }
  }
#endif
  if (sw) {
    for (uint r = 0u; r < R / 2u && row0 + r < p.n1; ++r)
      for (uint t = 0u; t < TBS && t0 + t < p.T; ++t) mm_store_swiglu(t0 + t, row0 + r, acc[r * TBS + t], acc[(r + R / 2u) * TBS + t]);
    return;
  }
  for (uint r = 0u; r < R && row0 + r < p.N; ++r)
    for (uint t = 0u; t < TBS && t0 + t < p.T; ++t) mm_store(t0 + t, row0 + r, acc[r * TBS + t]);
}
#else
void main() {
  const uint lid = gl_LocalInvocationID.x, lane = lid % L, grp = lid / L;
  // SwiGLU (matmul_out.glsl): the first half of the workgroup's lane groups computes the
  // gate rows of its features, the second half their up rows (the host keeps WG / L even).
  const bool sw = mm_swiglu();
  const uint half_groups = gl_WorkGroupSize.x / L / 2u;
  const uint feat = mm_tile() * half_groups + grp % half_groups;
  const uint row = sw ? (grp < half_groups ? feat : p.n1 + feat) : mm_tile() * (gl_WorkGroupSize.x / L) + grp;
  const bool live = sw ? feat < p.n1 : row < p.N;
  const uint t0 = gl_WorkGroupID.y * TBS;
  // Columns this workgroup computes: the token loops below stop there (a uniform branch in
  // loops the compiler unrolls), so a batch of 2-7 tokens costs its own columns, not 8.
  const uint tn = min(TBS, p.T - t0);
  if (!mm_row_here(min(t0, p.T - 1u))) return;  // MUL_MAT_ID: uniform over the workgroup (one row r)
  uint xb[TBS];  // x row starts (words); rows past T repeat the last one, results dropped
  for (uint t = 0u; t < TBS; ++t) xb[t] = (p.x_off >> 2) + mm_x_row(min(t0 + t, p.T - 1u)) * p.K;
  float acc[TBS];
  for (uint t = 0u; t < TBS; ++t) acc[t] = 0.0;
#ifdef LANES_REDUCE
  const bool nrm = mm_norm();
  float ns[TBS];
  for (uint t = 0u; t < TBS; ++t) ns[t] = 1.0;
  if (nrm) norm_scales(lid, xb, tn, ns);
#else
  const bool nrm = false;
#endif

  if (live) {
    const uint rowoff = mm_w_base(min(t0, p.T - 1u)) + row * p.w_row_bytes;  // MUL_MAT_ID: TB == 1
#if CHUNK == 32
    // x rows 16-byte aligned (the usual case): vec4 loads (4x fewer load instructions,
    // which is what CPU devices pay for); otherwise scalar loads.
    const bool x_vec4 = (p.x_off & 15u) == 0u;
    for (uint c = lane; c < p.K / 32u; c += L) {
      vec4 v[8];
      deq_chunk(rowoff, c, v);
#ifdef LANES_REDUCE
      if (nrm)
        for (uint j = 0u; j < 8u; ++j) v[j] *= gnorm4(c * 32u + 4u * j);
#endif
      for (uint t = 0u; t < TBS; ++t) {
        if (t >= tn) break;
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
#ifdef LANES_REDUCE
      if (nrm) v *= gnorm4(4u * c);
#endif
      for (uint t = 0u; t < TBS; ++t) {
        if (t >= tn) break;
        uint b = xb[t] + 4u * c;
        acc[t] += dot(v, x_vec4 ? x4[b >> 2] : vec4(x[b], x[b + 1u], x[b + 2u], x[b + 3u]));
      }
    }
    for (uint e = (p.K & ~3u) + lane; e < p.K; e += L) {
      float v = deq1(rowoff, e);
      if (nrm) v *= gnorm1(e);
      for (uint t = 0u; t < tn; ++t) acc[t] += v * x[xb[t] + e];
    }
#endif
  }

#ifdef LANES_REDUCE
  // Every lane group's sums end in red[] (SwiGLU reads its partner group's there):
  // group_sum(g, t) below reads lane group g's total for token t.
  bool sgr = false;
#ifdef SG_REDUCE
  sgr = L >= gl_SubgroupSize;  // uniform: a lane group is whole subgroups
  if (sgr) {
    for (uint t = 0u; t < TBS; ++t) {
      if (t >= tn) break;
      acc[t] = subgroupAdd(acc[t] * ns[t]);
    }
    if (gl_SubgroupInvocationID == 0u)
      for (uint t = 0u; t < tn; ++t) red[(lid / gl_SubgroupSize) * TBS + t] = acc[t];
    barrier();
  }
#endif
  if (!sgr) {
    for (uint t = 0u; t < TBS; ++t) red[lid * TBS + t] = acc[t] * ns[t];
    for (uint s = L / 2u; s > 0u; s >>= 1) {
      barrier();
      if (lane < s)
        for (uint t = 0u; t < tn; ++t) red[lid * TBS + t] += red[(lid + s) * TBS + t];
    }
    barrier();
  }
  for (uint t = 0u; t < tn; ++t) acc[t] = group_sum(grp, t, sgr);
  if (sw) {
    if (lane == 0u && grp < half_groups && live)
      for (uint t = 0u; t < TBS && t0 + t < p.T; ++t) mm_store_swiglu(t0 + t, feat, acc[t], group_sum(grp + half_groups, t, sgr));
    return;
  }
#endif
  if (lane == 0u && live)
    for (uint t = 0u; t < TBS && t0 + t < p.T; ++t) mm_store(t0 + t, row, acc[t]);
}
#endif
