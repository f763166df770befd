#version 450
// y[t, n] = sum_k w[n, k] * x[t, k] for T <= 8 columns with x quantized to q8_1
// (quantize_q8_1.comp) and integer dot products, as llama.cpp's mul_mat_vecq (#20). w {K, N}
// in q4_0, q4_1, q5_0, q5_1, q8_0 (a unit: one 32-element block), q4_K, q5_K, q6_K (a unit:
// 64 elements, two 32-element sub-blocks, of a 256-element super-block). Each weight unit is
// unpacked once into int8 words (4 weights each) and dotted with every column's q8_1 words:
// an exact integer sum per 32 (q6_K: 16) weights, scaled once by the block's scales and the
// activation block's d; the weights' constant offsets (q4_0's -8, K-quants' mins) use the
// block's s = d * sum(qs). INT_DOT builds use OpSDotKHR (SPV_KHR_integer_dot_product,
// through GL_EXT_spirv_intrinsics: Debian 12's glslang lacks GL_EXT_integer_dot_product);
// others unpack the bytes and multiply-add ints (same results, exact).
// Layout: L lanes share one output row (several rows per workgroup), lane l streams units l,
// l + L, ... of its row, q4_K / q5_K quants with 16-byte loads where the binding allows;
// lanes reduce by subgroupAdd (SG_REDUCE, L >= subgroup size) or through shared memory.
// Output modes: common/matmul_out.glsl (no norm: quantize_q8_1.comp applies it).
// Reference: gpu/ref/ref_q8_1.cpp (vec_dot_q8_1).
#extension GL_GOOGLE_include_directive : require
#ifdef SG_REDUCE
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifdef INT_DOT
#extension GL_EXT_spirv_intrinsics : require
#endif
#include "../common/push.glsl"
#define MM_ACCUMULATE
#define TB 8  // columns

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint L = 32;  // lanes per output row (power of two, divides WG)

layout(std430, binding = 0) readonly buffer W { uint wq[]; };
layout(std430, binding = 0) readonly buffer W4 { uvec4 wq4[]; };  // same buffer, 16-byte loads
layout(std430, binding = 1) readonly buffer XQ { uint xq[]; };     // q8_1 blocks, 9 words each
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) writeonly buffer Y2 { float y2[]; };
layout(std430, binding = 4) writeonly buffer Y3 { float y3[]; };
layout(std430, binding = 5) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform P { push_matmul p; };

#include "../common/dequant.glsl"
#include "../common/matmul_out.glsl"

#ifdef INT_DOT
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot_packed(uint a, uint b, spirv_literal int fmt);   // OpSDotKHR, PackedVectorFormat4x8Bit
int dot4(uint a, uint b) { return sdot_packed(a, b, 0); }
#else
int dot4(uint a, uint b) {  // the 4 signed bytes of a . those of b
  const ivec4 u = ivec4(bitfieldExtract(int(a), 0, 8), bitfieldExtract(int(a), 8, 8), bitfieldExtract(int(a), 16, 8),
                        bitfieldExtract(int(a), 24, 8));
  const ivec4 v = ivec4(bitfieldExtract(int(b), 0, 8), bitfieldExtract(int(b), 8, 8), bitfieldExtract(int(b), 16, 8),
                        bitfieldExtract(int(b), 24, 8));
  return u.x * v.x + u.y * v.y + u.z * v.z + u.w * v.w;
}
#endif

// Column t's q8_1 block i: (d, s) and its 8 words of qs.
vec2 xds(uint xr, uint i) { return unpackHalf2x16(xq[xr + 9u * i]); }
int xdot(uint xr, uint i, uint w[8], uint j0, uint n) {  // words j0 .. j0+n of block i . w[j0 ..]
  int s = 0;
  for (uint j = j0; j < j0 + n; ++j) s += dot4(w[j], xq[xr + 9u * i + 1u + j]);
  return s;
}

const uint M4 = 0x0F0F0F0Fu;
// Bit sh of each of the 4 bytes of u, moved to bit 4 (the fifth bit of a q5 weight).
uint b4(uint u, uint sh) { return ((u >> sh) & 0x01010101u) << 4; }
// Bits sh .. sh+3 of qh, one per byte, at bit 4 (q5_0 / q5_1's packed high bits).
uint hb4(uint qh, uint sh) {
  return (((qh >> sh) & 1u) << 4) | (((qh >> (sh + 1u)) & 1u) << 12) | (((qh >> (sh + 2u)) & 1u) << 20) |
         (((qh >> (sh + 3u)) & 1u) << 28);
}

#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K) || defined(TYPE_Q6_K)
#define UNIT 64u
#else
#define UNIT 32u
#endif

// Adds unit u of the row at byte rowoff, dotted with columns 0 .. tn-1 (q8_1 rows at word
// xr[t]), to acc.
void unit_dot(uint rowoff, uint u, uint tn, uint xr[TB], inout float acc[TB]) {
#if defined(TYPE_Q8_0)
  const uint o = rowoff + 34u * u;
  const float d = ldh(o);
  uint w[8];
  for (uint j = 0u; j < 8u; ++j) w[j] = ld32(o + 2u + 4u * j);
  for (uint t = 0u; t < TB; ++t) {
    if (t >= tn) break;
    acc[t] += d * xds(xr[t], u).x * float(xdot(xr[t], u, w, 0u, 8u));
  }
#elif defined(TYPE_Q4_0) || defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
#if defined(TYPE_Q4_0)
  const uint o = rowoff + 18u * u, qs = o + 2u;
  const vec2 dm = vec2(ldh(o), -8.0 * ldh(o));
#elif defined(TYPE_Q4_1)
  const uint o = rowoff + 20u * u, qs = o + 4u;
  const vec2 dm = unpackHalf2x16(ld32(o));
#elif defined(TYPE_Q5_0)
  const uint o = rowoff + 22u * u, qs = o + 6u, qh = ld32(o + 2u);
  const vec2 dm = vec2(ldh(o), -16.0 * ldh(o));
#else
  const uint o = rowoff + 24u * u, qs = o + 8u, qh = ld32(o + 4u);
  const vec2 dm = unpackHalf2x16(ld32(o));
#endif
  uint w[8];  // elements 4j .. 4j+3: low nibbles of qs words 0..3, then their high nibbles
  for (uint j = 0u; j < 4u; ++j) {
    const uint v = ld32(qs + 4u * j);
    w[j] = v & M4;
    w[j + 4u] = (v >> 4) & M4;
#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
    w[j] |= hb4(qh, 4u * j);
    w[j + 4u] |= hb4(qh, 16u + 4u * j);
#endif
  }
  for (uint t = 0u; t < TB; ++t) {
    if (t >= tn) break;
    const vec2 ds = xds(xr[t], u);
    acc[t] += dm.x * ds.x * float(xdot(xr[t], u, w, 0u, 8u)) + dm.y * ds.y;
  }
#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
  // Unit u: sub-blocks 2il and 2il+1 of super-block u / 4 (il = u % 4), the low and the high
  // nibbles of the same 32 quant bytes.
#if defined(TYPE_Q4_K)
  const uint o = rowoff + 144u * (u >> 2), il = u & 3u, qs = o + 16u + 32u * il;
#else
  const uint o = rowoff + 176u * (u >> 2), il = u & 3u, qs = o + 48u + 32u * il;
#endif
  uint v[8];
  if ((p.w_off & 15u) == 0u) {  // 16-byte aligned: two uvec4 loads (the row stride is a multiple of 16)
    const uvec4 a = wq4[qs >> 4], b = wq4[(qs >> 4) + 1u];
    v = uint[8](a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
  } else {
    for (uint j = 0u; j < 8u; ++j) v[j] = ld32(qs + 4u * j);
  }
  uint lo[8], hi[8];
  for (uint j = 0u; j < 8u; ++j) {
    lo[j] = v[j] & M4;
    hi[j] = (v[j] >> 4) & M4;
  }
#if defined(TYPE_Q5_K)
  uint h[8];
  if ((p.w_off & 15u) == 0u) {
    const uvec4 a = wq4[(o + 16u) >> 4], b = wq4[((o + 16u) >> 4) + 1u];
    h = uint[8](a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
  } else {
    for (uint j = 0u; j < 8u; ++j) h[j] = ld32(o + 16u + 4u * j);
  }
  for (uint j = 0u; j < 8u; ++j) {
    lo[j] |= b4(h[j], 2u * il);
    hi[j] |= b4(h[j], 2u * il + 1u);
  }
#endif
  const vec2 dm = unpackHalf2x16(ld32(o));
  const vec2 s0 = q4k_scale_min(o, 2u * il) * dm, s1 = q4k_scale_min(o, 2u * il + 1u) * dm;
  const uint i0 = 2u * u;  // q8_1 blocks i0, i0 + 1
  for (uint t = 0u; t < TB; ++t) {
    if (t >= tn) break;
    const vec2 x0 = xds(xr[t], i0), x1 = xds(xr[t], i0 + 1u);
    acc[t] += s0.x * x0.x * float(xdot(xr[t], i0, lo, 0u, 8u)) - s0.y * x0.y +
              s1.x * x1.x * float(xdot(xr[t], i0 + 1u, hi, 0u, 8u)) - s1.y * x1.y;
  }
#elif defined(TYPE_Q6_K)
  // Unit u: half n of super-block u / 4, quant bytes ql[64n + 32j ..] (j = u % 2): their low
  // nibbles are sub-block 4n + j, their high nibbles sub-block 4n + j + 2; 2 bits each from qh.
  const uint o = rowoff + 210u * (u >> 2), n = (u >> 1) & 1u, j2 = u & 1u;
  const uint ql = o + 64u * n + 32u * j2, qh = o + 128u + 32u * n;
  uint lo[8], hi[8];
  for (uint j = 0u; j < 8u; ++j) {
    const uint l = ld32(ql + 4u * j), h = ld32(qh + 4u * j);
    // 6-bit q in each byte, then q - 32 as a signed byte: (q + 0x60) ^ 0x80, no carries.
    lo[j] = (((l & M4) | (((h >> (2u * j2)) & 0x03030303u) << 4)) + 0x60606060u) ^ 0x80808080u;
    hi[j] = ((((l >> 4) & M4) | (((h >> (2u * j2 + 4u)) & 0x03030303u) << 4)) + 0x60606060u) ^ 0x80808080u;
  }
  const float d = ldh(o + 208u);
  const uint sc = o + 192u + 8u * n + 2u * j2;  // int8 scales: sub-block k's are sc + 2k' (k' = k % 4), 2 per 16
  const vec4 a = d * vec4(sx8(sc), sx8(sc + 1u), sx8(sc + 4u), sx8(sc + 5u));
  const uint i0 = 8u * (u >> 2) + 4u * n + j2;  // q8_1 blocks i0 (low nibbles), i0 + 2 (high)
  for (uint t = 0u; t < TB; ++t) {
    if (t >= tn) break;
    const float x0 = xds(xr[t], i0).x, x1 = xds(xr[t], i0 + 2u).x;
    acc[t] += x0 * (a.x * float(xdot(xr[t], i0, lo, 0u, 4u)) + a.y * float(xdot(xr[t], i0, lo, 4u, 4u))) +
              x1 * (a.z * float(xdot(xr[t], i0 + 2u, hi, 0u, 4u)) + a.w * float(xdot(xr[t], i0 + 2u, hi, 4u, 4u)));
  }
#endif
}

shared float red[256 * TB];

// Lane group g's total for column t after the reduction (as matmul.comp's group_sum).
float group_sum(uint g, uint t, bool sgr) {
  if (!sgr) return red[g * L * TB + t];
#ifndef SG_REDUCE
  return 0.0;
#else
  const uint n = L / gl_SubgroupSize;
  float s = 0.0;
  for (uint i = 0u; i < n; ++i) s += red[(g * n + i) * TB + t];
  return s;
#endif
}

void main() {
  const uint lid = gl_LocalInvocationID.x, lane = lid % L, grp = lid / L;
  // SwiGLU: the first half of the lane groups computes gate rows, the second half up rows.
  const bool sw = mm_swiglu();
  const uint half_groups = gl_WorkGroupSize.x / L / 2u;
  const uint feat = mm_tile() * half_groups + grp % half_groups;
  const uint row = sw ? (grp < half_groups ? feat : p.n1 + feat) : mm_tile() * (gl_WorkGroupSize.x / L) + grp;
  const bool live = sw ? feat < p.n1 : row < p.N;
  const uint tn = min(TB, p.T);
  uint xr[TB];  // column t's q8_1 row (words)
  for (uint t = 0u; t < TB; ++t) xr[t] = (p.x_off >> 2) + min(t, p.T - 1u) * (p.K / 32u) * 9u;
  float acc[TB];
  for (uint t = 0u; t < TB; ++t) acc[t] = 0.0;
  if (live) {
    const uint rowoff = p.w_off + row * p.w_row_bytes;
    for (uint u = lane; u < p.K / UNIT; u += L) unit_dot(rowoff, u, tn, xr, acc);
  }
  bool sgr = false;
#ifdef SG_REDUCE
  sgr = L >= gl_SubgroupSize;
  if (sgr) {
    for (uint t = 0u; t < TB; ++t) {
      if (t >= tn) break;
      acc[t] = subgroupAdd(acc[t]);
    }
    if (gl_SubgroupInvocationID == 0u)
      for (uint t = 0u; t < tn; ++t) red[(lid / gl_SubgroupSize) * TB + t] = acc[t];
    barrier();
  }
#endif
  if (!sgr) {
    for (uint t = 0u; t < TB; ++t) red[lid * TB + t] = acc[t];
    for (uint s = L / 2u; s > 0u; s >>= 1) {
      barrier();
      if (lane < s)
        for (uint t = 0u; t < tn; ++t) red[lid * TB + t] += red[(lid + s) * TB + t];
    }
    barrier();
  }
  for (uint t = 0u; t < tn; ++t) acc[t] = group_sum(grp, t, sgr);
  if (sw) {
    if (lane == 0u && grp < half_groups && live)
      for (uint t = 0u; t < tn; ++t) mm_store_swiglu(t, feat, acc[t], group_sum(grp + half_groups, t, sgr));
    return;
  }
  if (lane == 0u && live)
    for (uint t = 0u; t < tn; ++t) mm_store(t, row, acc[t]);
}
