// Weight decoding for every weight dtype from a uint[] buffer named `wq` (declare it before
// including). Works on 32-bit words only, so it needs no 8/16-bit storage feature; every
// allocation is padded so the one-word read-ahead in ld32 stays in bounds.
// Select the type with one of TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q8_0, TYPE_Q4_0,
// TYPE_Q4_K, TYPE_Q6_K. With HAVE_WQ4 (a uvec4[] alias `wq4` of the same buffer), aligned
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
float ldh(uint b) { return unpackHalf2x16(ld16(b)).x; }
int sx8(uint b) { return int(ld8(b) << 24) >> 24; }
vec4 s8x4(uint u) {
  return vec4(bitfieldExtract(int(u), 0, 8), bitfieldExtract(int(u), 8, 8), bitfieldExtract(int(u), 16, 8),
              bitfieldExtract(int(u), 24, 8));
}
vec4 u4x4(uint u, uint sh) {  // nibbles (bit offset sh) of the 4 bytes of u
  return vec4((u >> sh) & 15u, (u >> (sh + 8u)) & 15u, (u >> (sh + 16u)) & 15u, (u >> (sh + 24u)) & 15u);
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
vec2 q4k_scale_min(uint o, uint j) {  // o: block start; j: sub-block 0..7
  if (j < 4u) return vec2(ld8(o + 4u + j) & 63u, ld8(o + 8u + j) & 63u);
  uint a = ld8(o + 8u + j), lo = ld8(o + j), mo = ld8(o + 4u + j);
  return vec2((a & 15u) | ((lo >> 6) << 4), (a >> 4) | ((mo >> 6) << 4));
}
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
#endif
