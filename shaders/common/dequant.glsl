// Weight decoding for every weight dtype from a uint[] buffer named `wq` (declare it before
// including). Works on 32-bit words only, so it needs no 8/16-bit storage feature; every
// allocation is padded so the one-word read-ahead in ld32 stays in bounds.
// Select the type with one of TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q8_0, TYPE_Q4_0,
// TYPE_Q4_K, TYPE_Q6_K, TYPE_Q4_1, TYPE_Q5_0, TYPE_Q5_1, TYPE_Q2_K, TYPE_Q3_K, TYPE_Q5_K,
// TYPE_IQ4_NL, TYPE_IQ4_XS, TYPE_MXFP4, TYPE_IQ3_XXS, TYPE_IQ3_S, TYPE_IQ2_XXS, TYPE_IQ2_XS,
// TYPE_IQ2_S, TYPE_IQ1_S, TYPE_IQ1_M (layouts: src/gpu/dtype.hpp; host twins: gpu/quant*.cpp). With HAVE_WQ4 (a uvec4[] alias `wq4` of the same buffer), aligned
// f32/f16 reads and q4_K/q5_K chunks (16-byte aligned blocks) use 16-byte loads; the other
// block types' blocks (18, 34, 210 bytes ...) are only 2-byte aligned and use 32-bit loads. Provides:
//   CHUNK                    elements per deq_chunk call (32 for block types, 4 otherwise)
//   deq_chunk(rowoff, c, v)  elements [c*CHUNK, c*CHUNK+CHUNK) of the row at byte rowoff
//   deq1(rowoff, e)          one element (any e < K)

uint ld8(uint b) { return (wq[b >> 2] >> ((b & 3u) * 8u)) & 0xffu; }
uint ld16(uint b) { return (wq[b >> 2] >> ((b & 2u) * 8u)) & 0xffffu; }  // b even
uint ld32(uint b) {  // b even
  uint s = (b & 2u) * 8u, i = b >> 2;
  return (wq[i] >> s) | ((wq[i + 1u] << 16) << (16u - s));
}
uint ld32u(uint b) {  // any b (mxfp4's 17-byte blocks)
  uint s = (b & 3u) * 8u, i = b >> 2;
  return (wq[i] >> s) | ((wq[i + 1u] << 1) << (31u - s));
}
float ldh(uint b) { return unpackHalf2x16(ld16(b)).x; }
int sx8(uint b) { return int(ld8(b) << 24) >> 24; }
vec4 s8x4(uint u) {
  return vec4(bitfieldExtract(int(u), 0, 8), bitfieldExtract(int(u), 8, 8), bitfieldExtract(int(u), 16, 8),
              bitfieldExtract(int(u), 24, 8));
}
vec4 u4x4(uint u, uint sh) {  // nibbles (bit offset sh) of the 4 bytes of u
  return vec4((u >> sh) & 15u, (u >> (sh + 8u)) & 15u, (u >> (sh + 16u)) & 15u, (u >> (sh + 24u)) & 15u);
}
vec4 u2x4(uint u, uint sh) {  // 2-bit fields (bit offset sh) of the 4 bytes of u
  return vec4((u >> sh) & 3u, (u >> (sh + 8u)) & 3u, (u >> (sh + 16u)) & 3u, (u >> (sh + 24u)) & 3u);
}
vec4 b1x4(uint u, uint sh) {  // bit sh of each of the 4 bytes of u
  return vec4((u >> sh) & 1u, (u >> (sh + 8u)) & 1u, (u >> (sh + 16u)) & 1u, (u >> (sh + 24u)) & 1u);
}
vec4 bits4(uint w, uint sh) {  // bits sh..sh+3 of w
  return vec4((w >> sh) & 1u, (w >> (sh + 1u)) & 1u, (w >> (sh + 2u)) & 1u, (w >> (sh + 3u)) & 1u);
}

#if defined(TYPE_F32) || defined(TYPE_F16) || defined(TYPE_BF16)
#define CHUNK 4
#endif

// Eight consecutive words from byte b (4-aligned): two 16-byte loads where b is 16-byte
// aligned and the kernel declares the uvec4 alias (HAVE_WQ4), else eight 32-bit loads.
void ld32x8(uint b, out uint u[8]) {
#ifdef HAVE_WQ4
  if ((b & 15u) == 0u) {
    const uvec4 a = wq4[b >> 4], c = wq4[(b >> 4) + 1u];
    u = uint[8](a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w);
    return;
  }
#endif
  for (uint j = 0u; j < 8u; ++j) u[j] = wq[(b >> 2) + j];
}

#if defined(TYPE_F32)
vec4 deq4(uint rowoff, uint e) {
  uint i = (rowoff >> 2) + e;
#ifdef HAVE_WQ4
  if ((i & 3u) == 0u) return uintBitsToFloat(wq4[i >> 2]);
#endif
  return vec4(uintBitsToFloat(wq[i]), uintBitsToFloat(wq[i + 1u]), uintBitsToFloat(wq[i + 2u]),
              uintBitsToFloat(wq[i + 3u]));
}
float deq1(uint rowoff, uint e) { return uintBitsToFloat(wq[(rowoff >> 2) + e]); }
#elif defined(TYPE_F16)
vec4 deq4(uint rowoff, uint e) {
  uint b = rowoff + 2u * e;
#ifdef HAVE_WQ4
  if ((b & 15u) == 0u || (b & 15u) == 8u) {
    uvec4 u = wq4[b >> 4];
    return (b & 8u) == 0u ? vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)) : vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));
  }
#endif
  return vec4(unpackHalf2x16(ld32(b)), unpackHalf2x16(ld32(b + 4u)));
}
float deq1(uint rowoff, uint e) { return ldh(rowoff + 2u * e); }
#elif defined(TYPE_BF16)
vec2 bf2(uint u) { return vec2(uintBitsToFloat(u << 16), uintBitsToFloat(u & 0xffff0000u)); }
vec4 deq4(uint rowoff, uint e) {
  uint b = rowoff + 2u * e;
  return vec4(bf2(ld32(b)), bf2(ld32(b + 4u)));
}
float deq1(uint rowoff, uint e) { return uintBitsToFloat(ld16(rowoff + 2u * e) << 16); }
#endif

#if defined(TYPE_F32) || defined(TYPE_F16) || defined(TYPE_BF16)
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {}  // unused for scalar types
#endif

#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
vec2 q4k_scale_min(uint o, uint j) {  // o: block start; j: sub-block 0..7
  if (j < 4u) return vec2(ld8(o + 4u + j) & 63u, ld8(o + 8u + j) & 63u);
  uint a = ld8(o + 8u + j), lo = ld8(o + j), mo = ld8(o + 4u + j);
  return vec2((a & 15u) | ((lo >> 6) << 4), (a >> 4) | ((mo >> 6) << 4));
}
#endif
#if defined(TYPE_IQ4_NL) || defined(TYPE_IQ4_XS)
const float KV_IQ4NL[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0,
                                     53.0, 69.0, 89.0, 113.0);
vec4 kv4(uint u, uint sh) {
  return vec4(KV_IQ4NL[(u >> sh) & 15u], KV_IQ4NL[(u >> (sh + 8u)) & 15u], KV_IQ4NL[(u >> (sh + 16u)) & 15u],
              KV_IQ4NL[(u >> (sh + 24u)) & 15u]);
}
#endif
#if defined(TYPE_MXFP4)
const float KV_MXFP4[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);
vec4 kv4(uint u, uint sh) {
  return vec4(KV_MXFP4[(u >> sh) & 15u], KV_MXFP4[(u >> (sh + 8u)) & 15u], KV_MXFP4[(u >> (sh + 16u)) & 15u],
              KV_MXFP4[(u >> (sh + 24u)) & 15u]);
}
float e8m0_half(uint e) { return uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23); }  // 2^(e-128)
#endif

#if defined(TYPE_Q8_0)
#define CHUNK 32
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + c * 34u;
  float d = ldh(o);
  uint b = o + 2u, s = (b & 2u) * 8u, i = b >> 2;
  uint w0 = wq[i];
  for (uint j = 0u; j < 8u; ++j) {
    uint w1 = wq[i + 1u + j];
    v[j] = s8x4((w0 >> s) | ((w1 << 16) << (16u - s))) * d;
    w0 = w1;
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 5) * 34u;
  return ldh(o) * float(sx8(o + 2u + (e & 31u)));
}
#elif defined(TYPE_Q4_0)
#define CHUNK 32
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + c * 18u;
  float d = ldh(o);
  for (uint j = 0u; j < 4u; ++j) {
    uint u = ld32(o + 2u + 4u * j);
    v[j] = (u4x4(u, 0u) - 8.0) * d;
    v[j + 4u] = (u4x4(u, 4u) - 8.0) * d;
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 5) * 18u, l = e & 31u;
  return ldh(o) * (float((ld8(o + 2u + (l & 15u)) >> ((l >> 4) * 4u)) & 15u) - 8.0);
}
#elif defined(TYPE_Q4_K)
#define CHUNK 32
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 144u, sub = c & 7u;
  vec2 dm = unpackHalf2x16(ld32(o));
  vec2 sm = q4k_scale_min(o, sub);
  float sc = dm.x * sm.x, mn = dm.y * sm.y;
  uint q = o + 16u + 32u * (sub >> 1), sh = (sub & 1u) * 4u;
  uint u[8];
  ld32x8(q, u);  // 144-byte blocks: 16-byte aligned where the row is
  for (uint j = 0u; j < 8u; ++j) v[j] = u4x4(u[j], sh) * sc - mn;
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 144u, r = e & 255u, sub = r >> 5;
  vec2 dm = unpackHalf2x16(ld32(o));
  vec2 sm = q4k_scale_min(o, sub);
  uint q = (ld8(o + 16u + 32u * (sub >> 1) + (r & 31u)) >> ((sub & 1u) * 4u)) & 15u;
  return dm.x * sm.x * float(q) - dm.y * sm.y;
}
#elif defined(TYPE_Q6_K)
#define CHUNK 32
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 210u, cc = c & 7u, n = cc >> 2, qt = cc & 3u;
  float d = ldh(o + 208u);
  float s0 = d * float(sx8(o + 192u + 8u * n + 2u * qt)), s1 = d * float(sx8(o + 193u + 8u * n + 2u * qt));
  uint ql = o + 64u * n + 32u * (qt & 1u), qh = o + 128u + 32u * n;
  uint lsh = (qt >> 1) * 4u, hsh = 2u * qt;
  for (uint j = 0u; j < 8u; ++j) {
    uint lo = ld32(ql + 4u * j), hi = ld32(qh + 4u * j);
    vec4 q = u4x4(lo, lsh) + 16.0 * vec4((hi >> hsh) & 3u, (hi >> (hsh + 8u)) & 3u, (hi >> (hsh + 16u)) & 3u,
                                         (hi >> (hsh + 24u)) & 3u) - 32.0;
    v[j] = q * (j < 4u ? s0 : s1);
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 210u, r = e & 255u, n = r >> 7, qt = (r & 127u) >> 5, l = r & 31u;
  uint lo = (ld8(o + 64u * n + l + 32u * (qt & 1u)) >> ((qt >> 1) * 4u)) & 15u;
  uint hi = (ld8(o + 128u + 32u * n + l) >> (2u * qt)) & 3u;
  float sc = float(sx8(o + 192u + 8u * n + (l >> 4) + 2u * qt));
  return ldh(o + 208u) * sc * (float(lo | (hi << 4)) - 32.0);
}
#elif defined(TYPE_Q4_1)
#define CHUNK 32
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + c * 20u;
  vec2 dm = unpackHalf2x16(ld32(o));
  for (uint j = 0u; j < 4u; ++j) {
    uint u = ld32(o + 4u + 4u * j);
    v[j] = u4x4(u, 0u) * dm.x + dm.y;
    v[j + 4u] = u4x4(u, 4u) * dm.x + dm.y;
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 5) * 20u, l = e & 31u;
  vec2 dm = unpackHalf2x16(ld32(o));
  return dm.x * float((ld8(o + 4u + (l & 15u)) >> ((l >> 4) * 4u)) & 15u) + dm.y;
}
#elif defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
#define CHUNK 32
#ifdef TYPE_Q5_0
#define Q5_BYTES 22u
#define Q5_QH 2u
#else
#define Q5_BYTES 24u
#define Q5_QH 4u
#endif
vec2 q5_dm(uint o) {  // (scale, offset): q5_0 x = d*q - 16d, q5_1 x = d*q + m
#ifdef TYPE_Q5_0
  float d = ldh(o);
  return vec2(d, -16.0 * d);
#else
  return unpackHalf2x16(ld32(o));
#endif
}
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + c * Q5_BYTES;
  vec2 dm = q5_dm(o);
  uint qh = ld32(o + Q5_QH);
  for (uint j = 0u; j < 4u; ++j) {
    uint u = ld32(o + Q5_QH + 4u + 4u * j);
    v[j] = (u4x4(u, 0u) + 16.0 * bits4(qh, 4u * j)) * dm.x + dm.y;
    v[j + 4u] = (u4x4(u, 4u) + 16.0 * bits4(qh, 16u + 4u * j)) * dm.x + dm.y;
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 5) * Q5_BYTES, l = e & 31u;
  vec2 dm = q5_dm(o);
  uint q = ((ld8(o + Q5_QH + 4u + (l & 15u)) >> ((l >> 4) * 4u)) & 15u) | (((ld32(o + Q5_QH) >> l) & 1u) << 4);
  return float(q) * dm.x + dm.y;
}
#elif defined(TYPE_IQ4_NL)
#define CHUNK 32
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + c * 18u;
  float d = ldh(o);
  for (uint j = 0u; j < 4u; ++j) {
    uint u = ld32(o + 2u + 4u * j);
    v[j] = kv4(u, 0u) * d;
    v[j + 4u] = kv4(u, 4u) * d;
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 5) * 18u, l = e & 31u;
  return ldh(o) * KV_IQ4NL[(ld8(o + 2u + (l & 15u)) >> ((l >> 4) * 4u)) & 15u];
}
#elif defined(TYPE_MXFP4)
#define CHUNK 32
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + c * 17u;
  float d = e8m0_half(ld8(o));
  for (uint j = 0u; j < 4u; ++j) {
    uint u = ld32u(o + 1u + 4u * j);
    v[j] = kv4(u, 0u) * d;
    v[j + 4u] = kv4(u, 4u) * d;
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 5) * 17u, l = e & 31u;
  return e8m0_half(ld8(o)) * KV_MXFP4[(ld8(o + 1u + (l & 15u)) >> ((l >> 4) * 4u)) & 15u];
}
#elif defined(TYPE_Q2_K)
#define CHUNK 32
// Chunk cc of a block (32 elements): 2-bit fields of qs[32*(cc/4) ..] at bit 2*(cc%4);
// scales[2cc] for its first 16 elements, scales[2cc+1] for the rest.
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 84u, cc = c & 7u;
  vec2 dm = unpackHalf2x16(ld32(o + 80u));
  uint s0 = ld8(o + 2u * cc), s1 = ld8(o + 2u * cc + 1u);
  vec2 a0 = vec2(dm.x * float(s0 & 15u), dm.y * float(s0 >> 4)), a1 = vec2(dm.x * float(s1 & 15u), dm.y * float(s1 >> 4));
  uint q = o + 16u + 32u * (cc >> 2), sh = 2u * (cc & 3u);
  for (uint j = 0u; j < 8u; ++j) {
    vec2 a = j < 4u ? a0 : a1;
    v[j] = u2x4(ld32(q + 4u * j), sh) * a.x - a.y;
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 84u, r = e & 255u;
  vec2 dm = unpackHalf2x16(ld32(o + 80u));
  uint s = ld8(o + (r >> 4));
  uint q = (ld8(o + 16u + 32u * (r >> 7) + (r & 31u)) >> (2u * ((r >> 5) & 3u))) & 3u;
  return dm.x * float(s & 15u) * float(q) - dm.y * float(s >> 4);
}
#elif defined(TYPE_Q3_K)
#define CHUNK 32
float q3k_scale(uint o, uint i) {  // 6-bit scale i (0..15) minus 32
  uint lo = (ld8(o + 96u + (i & 7u)) >> (4u * (i >> 3))) & 15u, hi = (ld8(o + 104u + (i & 3u)) >> (2u * (i >> 2))) & 3u;
  return float(int(lo | (hi << 4)) - 32);
}
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 110u, cc = c & 7u;
  float d = ldh(o + 108u);
  float s0 = d * q3k_scale(o, 2u * cc), s1 = d * q3k_scale(o, 2u * cc + 1u);
  uint q = o + 32u + 32u * (cc >> 2), sh = 2u * (cc & 3u);
  for (uint j = 0u; j < 8u; ++j) {
    vec4 lo = u2x4(ld32(q + 4u * j), sh), hi = b1x4(ld32(o + 4u * j), cc);
    v[j] = (lo + 4.0 * hi - 4.0) * (j < 4u ? s0 : s1);
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 110u, r = e & 255u;
  uint lo = (ld8(o + 32u + 32u * (r >> 7) + (r & 31u)) >> (2u * ((r >> 5) & 3u))) & 3u;
  uint hi = (ld8(o + (r & 31u)) >> (r >> 5)) & 1u;
  return ldh(o + 108u) * q3k_scale(o, r >> 4) * (float(lo + 4u * hi) - 4.0);
}
#elif defined(TYPE_Q5_K)
#define CHUNK 32
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 176u, sub = c & 7u;
  vec2 dm = unpackHalf2x16(ld32(o));
  vec2 sm = q4k_scale_min(o, sub);
  float sc = dm.x * sm.x, mn = dm.y * sm.y;
  uint q = o + 48u + 32u * (sub >> 1), sh = (sub & 1u) * 4u;
  uint u[8], h[8];
  ld32x8(q, u);  // 176-byte blocks: quants and high bits 16-byte aligned where the row is
  ld32x8(o + 16u, h);
  for (uint j = 0u; j < 8u; ++j) v[j] = (u4x4(u[j], sh) + 16.0 * b1x4(h[j], sub)) * sc - mn;
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 176u, r = e & 255u, sub = r >> 5;
  vec2 dm = unpackHalf2x16(ld32(o));
  vec2 sm = q4k_scale_min(o, sub);
  uint q = ((ld8(o + 48u + 32u * (sub >> 1) + (r & 31u)) >> ((sub & 1u) * 4u)) & 15u) |
           (((ld8(o + 16u + (r & 31u)) >> sub) & 1u) << 4);
  return dm.x * sm.x * float(q) - dm.y * sm.y;
}
#elif defined(TYPE_IQ4_XS)
#define CHUNK 32
float iq4xs_scale(uint o, uint s) {  // d * (ls - 32) of sub-block s
  uint ls = ((ld8(o + 4u + (s >> 1)) >> (4u * (s & 1u))) & 15u) | (((ld16(o + 2u) >> (2u * s)) & 3u) << 4);
  return ldh(o) * float(int(ls) - 32);
}
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 136u, s = c & 7u;
  float dl = iq4xs_scale(o, s);
  for (uint j = 0u; j < 4u; ++j) {
    uint u = ld32(o + 8u + 16u * s + 4u * j);
    v[j] = kv4(u, 0u) * dl;
    v[j + 4u] = kv4(u, 4u) * dl;
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 136u, r = e & 255u, s = r >> 5, l = r & 31u;
  return iq4xs_scale(o, s) * KV_IQ4NL[(ld8(o + 8u + 16u * s + (l & 15u)) >> ((l >> 4) * 4u)) & 15u];
}
#endif

// ---- grid i-quants (#21): iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq2_s, iq1_s, iq1_m ------------
// Chunk c is sub-block c&7 (32 elements = 4 groups of 8, v[2l], v[2l+1] for group l) of
// block c>>3. The grids live in a storage buffer at binding 7 (the Vulkan backend binds it
// to every dispatch whose kernel leaves 7 free; layout and offsets: gpu/iq_grids.hpp
// shader_words, mirrored by IQG_* here). Why a buffer: a const array indexed by a runtime
// value becomes a per-invocation private copy in SPIR-V, which llvmpipe compiles for minutes
// per pipeline (an if-ladder per lookup) and real GPUs place in slow local memory; a
// read-only buffer is cached memory everywhere and needs no barrier or per-workgroup copy.
// Host twins: gpu/quant_iq.cpp.
#if defined(TYPE_IQ3_XXS) || defined(TYPE_IQ3_S) || defined(TYPE_IQ2_XXS) || defined(TYPE_IQ2_XS) || \
    defined(TYPE_IQ2_S) || defined(TYPE_IQ1_S) || defined(TYPE_IQ1_M)
layout(std430, binding = 7) readonly buffer IQG { uint iq_grid[]; };
#define IQG_IQ2XXS 0u
#define IQG_IQ2XS 128u
#define IQG_IQ2S 384u
#define IQG_IQ3XXS 896u
#define IQG_IQ3S 1152u
#define IQG_IQ1S 1664u
#define CHUNK 32
uint ksigns(uint i) { return i | ((uint(bitCount(i)) & 1u) << 7); }  // 7 signs + parity
vec4 sgn4(uint s, uint sh) { return vec4(1.0) - 2.0 * bits4(s, sh); }  // bit set: -1
vec4 u8x4(uint u) { return vec4(u & 255u, (u >> 8) & 255u, (u >> 16) & 255u, u >> 24); }
// Elements 4h..4h+3 of a packed 3-level point p (2-bit codes c): iq2 8 + 17c + (c >> 1) is
// 8, 25, 43; iq1s c - 1 is -1, 0, 1.
vec4 codes4(uint p, uint h) { return vec4((p >> (8u * h)) & 3u, (p >> (8u * h + 2u)) & 3u, (p >> (8u * h + 4u)) & 3u, (p >> (8u * h + 6u)) & 3u); }
vec4 iq2_lv4(uint p, uint h) { vec4 c = codes4(p, h); return 8.0 + 17.0 * c + floor(c * 0.5); }
float iq2_lv1(uint p, uint j) { uint c = (p >> (2u * j)) & 3u; return float(8u + 17u * c + (c >> 1)); }
// Packed point i of the 3-level grid at word offset base.
uint grid16(uint base, uint i) { return (iq_grid[base + (i >> 1)] >> (16u * (i & 1u))) & 0xffffu; }
#endif

#if defined(TYPE_IQ2_XXS) || defined(TYPE_IQ2_XS) || defined(TYPE_IQ2_S)
// Group l of a chunk: 8 elements db * grid point p * signs s (bit j: element j negative).
void iq2_group(out vec4 v[8], uint l, uint p, uint s, float db) {
  v[2u * l] = iq2_lv4(p, 0u) * sgn4(s, 0u) * db;
  v[2u * l + 1u] = iq2_lv4(p, 1u) * sgn4(s, 4u) * db;
}
#endif

#if defined(TYPE_IQ2_XXS)
// Block: f16 d @0, (q0, q1) uint32 pairs @2+8ib: q0 bytes are grid indices, q1 = 4 x 7-bit
// sign indices | ls << 28.
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 66u, ib = c & 7u;
  uint q0 = ld32(o + 2u + 8u * ib), q1 = ld32(o + 6u + 8u * ib);
  float db = ldh(o) * (0.5 + float(q1 >> 28)) * 0.25;
  for (uint l = 0u; l < 4u; ++l) iq2_group(v, l, grid16(IQG_IQ2XXS, (q0 >> (8u * l)) & 255u), ksigns((q1 >> (7u * l)) & 127u), db);
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 66u, r = e & 255u, ib = r >> 5, l = (r >> 3) & 3u, j = r & 7u;
  uint q0 = ld32(o + 2u + 8u * ib), q1 = ld32(o + 6u + 8u * ib);
  float db = ldh(o) * (0.5 + float(q1 >> 28)) * 0.25;
  uint s = ksigns((q1 >> (7u * l)) & 127u);
  return iq2_lv1(grid16(IQG_IQ2XXS, (q0 >> (8u * l)) & 255u), j) * (((s >> j) & 1u) != 0u ? -1.0 : 1.0) * db;
}
#elif defined(TYPE_IQ2_XS)
// Block: f16 d @0, uint16 qs[32] @2 (9-bit index | 7-bit sign index << 9), scales[8] @66.
uint iq2xs_q(uint o, uint ib, uint l) { return (ld32(o + 2u + 8u * ib + 4u * (l >> 1)) >> (16u * (l & 1u))) & 0xffffu; }
float iq2xs_db(uint o, uint ib, uint l) {
  return ldh(o) * (0.5 + float((ld8(o + 66u + ib) >> (4u * (l >> 1))) & 15u)) * 0.25;
}
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 74u, ib = c & 7u;
  for (uint l = 0u; l < 4u; ++l) {
    uint q = iq2xs_q(o, ib, l);
    iq2_group(v, l, grid16(IQG_IQ2XS, q & 511u), ksigns(q >> 9), iq2xs_db(o, ib, l));
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 74u, r = e & 255u, ib = r >> 5, l = (r >> 3) & 3u, j = r & 7u;
  uint q = iq2xs_q(o, ib, l), s = ksigns(q >> 9);
  return iq2_lv1(grid16(IQG_IQ2XS, q & 511u), j) * (((s >> j) & 1u) != 0u ? -1.0 : 1.0) * iq2xs_db(o, ib, l);
}
#elif defined(TYPE_IQ2_S)
// Block: f16 d @0, qs[32] @2 (index low 8), signs[32] @34, qh[8] @66 (index bits 8-9 at 2l),
// scales[8] @74.
uint iq2s_index(uint o, uint ib, uint l) { return ld8(o + 2u + 4u * ib + l) | (((ld8(o + 66u + ib) >> (2u * l)) & 3u) << 8); }
float iq2s_db(uint o, uint ib, uint l) {
  return ldh(o) * (0.5 + float((ld8(o + 74u + ib) >> (4u * (l >> 1))) & 15u)) * 0.25;
}
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 82u, ib = c & 7u;
  uint sw = ld32(o + 34u + 4u * ib);
  for (uint l = 0u; l < 4u; ++l) iq2_group(v, l, grid16(IQG_IQ2S, iq2s_index(o, ib, l)), (sw >> (8u * l)) & 255u, iq2s_db(o, ib, l));
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 82u, r = e & 255u, ib = r >> 5, l = (r >> 3) & 3u, j = r & 7u;
  uint s = ld8(o + 34u + 4u * ib + l);
  return iq2_lv1(grid16(IQG_IQ2S, iq2s_index(o, ib, l)), j) * (((s >> j) & 1u) != 0u ? -1.0 : 1.0) * iq2s_db(o, ib, l);
}
#elif defined(TYPE_IQ3_XXS)
// Block: f16 d @0, qs[64] @2 (grid indices, 2 per group), uint32 aux[8] @66 (4 x 7-bit sign
// indices | ls << 28).
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 98u, ib = c & 7u;
  uint aux = ld32(o + 66u + 4u * ib);
  float db = ldh(o) * (0.5 + float(aux >> 28)) * 0.5;
  for (uint l = 0u; l < 4u; ++l) {
    uint qw = ld32(o + 2u + 8u * ib + 4u * (l >> 1)) >> (16u * (l & 1u)), s = ksigns((aux >> (7u * l)) & 127u);
    v[2u * l] = u8x4(iq_grid[IQG_IQ3XXS + (qw & 255u)]) * sgn4(s, 0u) * db;
    v[2u * l + 1u] = u8x4(iq_grid[IQG_IQ3XXS + ((qw >> 8) & 255u)]) * sgn4(s, 4u) * db;
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 98u, r = e & 255u, ib = r >> 5, l = (r >> 3) & 3u, j = r & 7u;
  uint aux = ld32(o + 66u + 4u * ib), s = ksigns((aux >> (7u * l)) & 127u);
  uint p = iq_grid[IQG_IQ3XXS + ld8(o + 2u + 8u * ib + 2u * l + (j >> 2))];
  float db = ldh(o) * (0.5 + float(aux >> 28)) * 0.5;
  return float((p >> (8u * (j & 3u))) & 255u) * (((s >> j) & 1u) != 0u ? -1.0 : 1.0) * db;
}
#elif defined(TYPE_IQ3_S)
// Block: f16 d @0, qs[64] @2, qh[8] @66 (9th index bit of point k at bit k), signs[32] @74,
// scales[4] @106 (4 bits per sub-block).
uint iq3s_index(uint o, uint ib, uint k) { return ld8(o + 2u + 8u * ib + k) | (((ld8(o + 66u + ib) >> k) & 1u) << 8); }
float iq3s_db(uint o, uint ib) { return ldh(o) * float(1u + 2u * ((ld8(o + 106u + (ib >> 1)) >> (4u * (ib & 1u))) & 15u)); }
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 110u, ib = c & 7u;
  uint sw = ld32(o + 74u + 4u * ib);
  float db = iq3s_db(o, ib);
  for (uint k = 0u; k < 8u; ++k) v[k] = u8x4(iq_grid[IQG_IQ3S + iq3s_index(o, ib, k)]) * sgn4(sw, 8u * (k >> 1) + 4u * (k & 1u)) * db;
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 110u, r = e & 255u, ib = r >> 5, k = (r >> 2) & 7u, j = r & 7u;
  uint s = ld8(o + 74u + 4u * ib + ((r >> 3) & 3u));
  uint p = iq_grid[IQG_IQ3S + iq3s_index(o, ib, k)];
  return float((p >> (8u * (r & 3u))) & 255u) * (((s >> j) & 1u) != 0u ? -1.0 : 1.0) * iq3s_db(o, ib);
}
#elif defined(TYPE_IQ1_S)
// Block: f16 d @0, qs[32] @2 (index low 8), uint16 qh[8] @34 (3 index bits per group at 3l,
// ls at 12, delta sign at 15).
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 50u, ib = c & 7u;
  uint qs = ld32(o + 2u + 4u * ib), qh = ld16(o + 34u + 2u * ib);
  float dl = ldh(o) * float(2u * ((qh >> 12) & 7u) + 1u), delta = (qh & 0x8000u) != 0u ? -0.125 : 0.125;
  for (uint l = 0u; l < 4u; ++l) {
    uint p = grid16(IQG_IQ1S, ((qs >> (8u * l)) & 255u) | (((qh >> (3u * l)) & 7u) << 8));
    v[2u * l] = dl * (codes4(p, 0u) - 1.0 + delta);
    v[2u * l + 1u] = dl * (codes4(p, 1u) - 1.0 + delta);
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 50u, r = e & 255u, ib = r >> 5, l = (r >> 3) & 3u, j = r & 7u;
  uint qh = ld16(o + 34u + 2u * ib);
  float dl = ldh(o) * float(2u * ((qh >> 12) & 7u) + 1u), delta = (qh & 0x8000u) != 0u ? -0.125 : 0.125;
  uint p = grid16(IQG_IQ1S, ld8(o + 2u + 4u * ib + l) | (((qh >> (3u * l)) & 7u) << 8));
  return dl * (float((p >> (2u * j)) & 3u) - 1.0 + delta);
}
#elif defined(TYPE_IQ1_M)
// Block: qs[32] @0 (index low 8), qh[16] @32 (per group a nibble: 3 index bits, delta sign),
// uint16 sc[4] @48 (3-bit ls per 16 elements at 3h; f16 d in the top nibbles).
uint iq1m_sc(uint o, uint i) { return (ld32(o + 48u + 4u * (i >> 1)) >> (16u * (i & 1u))) & 0xffffu; }
float iq1m_d(uint o) {
  uint w0 = ld32(o + 48u), w1 = ld32(o + 52u);
  return unpackHalf2x16(((w0 >> 12) & 0xfu) | ((w0 >> 24) & 0xf0u) | ((w1 >> 4) & 0xf00u) | ((w1 >> 16) & 0xf000u)).x;
}
// Group g (0..31) of the block: dl * (grid + delta).
float iq1m_dl(uint o, float d, uint g) { uint h = g >> 1; return d * float(2u * ((iq1m_sc(o, h >> 2) >> (3u * (h & 3u))) & 7u) + 1u); }
uint iq1m_nib(uint o, uint g) { return (ld8(o + 32u + (g >> 1)) >> (4u * (g & 1u))) & 15u; }
void deq_chunk(uint rowoff, uint c, out vec4 v[8]) {
  uint o = rowoff + (c >> 3) * 56u, ib = c & 7u;
  float d = iq1m_d(o);
  for (uint l = 0u; l < 4u; ++l) {
    uint g = 4u * ib + l, nb = iq1m_nib(o, g);
    uint p = grid16(IQG_IQ1S, ld8(o + g) | ((nb & 7u) << 8));
    float dl = iq1m_dl(o, d, g), delta = (nb & 8u) != 0u ? -0.125 : 0.125;
    v[2u * l] = dl * (codes4(p, 0u) - 1.0 + delta);
    v[2u * l + 1u] = dl * (codes4(p, 1u) - 1.0 + delta);
  }
}
float deq1(uint rowoff, uint e) {
  uint o = rowoff + (e >> 8) * 56u, r = e & 255u, g = r >> 3, j = r & 7u, nb = iq1m_nib(o, g);
  uint p = grid16(IQG_IQ1S, ld8(o + g) | ((nb & 7u) << 8));
  float delta = (nb & 8u) != 0u ? -0.125 : 0.125;
  return iq1m_dl(o, iq1m_d(o), g) * (float((p >> (2u * j)) & 3u) - 1.0 + delta);
}
#endif
