// Weight decoding for every weight dtype from a uint[] buffer named `wq` (declare it before
// including). Works on 32-bit words only, so it needs no 8/16-bit storage feature; every
// allocation is padded so the one-word read-ahead in ld32 stays in bounds.
// Select the type with one of TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q8_0, TYPE_Q4_0,
// TYPE_Q4_K, TYPE_Q6_K, TYPE_Q4_1, TYPE_Q5_0, TYPE_Q5_1, TYPE_Q2_K, TYPE_Q3_K, TYPE_Q5_K,
// TYPE_IQ4_NL, TYPE_IQ4_XS, TYPE_MXFP4 (layouts: src/gpu/dtype.hpp; host twins: gpu/quant*.cpp). With HAVE_WQ4 (a uvec4[] alias `wq4` of the same buffer), aligned
// f32/f16 reads use 16-byte loads. Provides:
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
  for (uint j = 0u; j < 8u; ++j) v[j] = u4x4(ld32(q + 4u * j), sh) * sc - mn;
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
  for (uint j = 0u; j < 8u; ++j) v[j] = (u4x4(ld32(q + 4u * j), sh) + 16.0 * b1x4(ld32(o + 16u + 4u * j), sub)) * sc - mn;
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
