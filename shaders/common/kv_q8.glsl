// The q8_0 KV cache (KV_Q8): rows of llama.cpp's block_q8_0 (34 bytes: f16 d, int8 q[32];
// x = d * q) in a uint[] storage buffer. Blocks start at even byte offsets, so each field
// read here is a 16-bit aligned halfword or a 32-bit group of 4 quants at an even offset.
// Writing: q8_quantize + Q8_PUT (one invocation per block; the halfword a block shares with
// its neighbour's word is written with atomics, the rest with plain stores). The cache is
// allocated with 4 spare bytes (gpu/vk alloc, k_cache.*/v_cache.* names) so the word after
// the last block exists.
// Host twin: gpu/quant.cpp quantize_q8_0 / dequantize_q8_0 (d = amax / 127, q = round half
// away from zero of x / d).

#define Q8_LD8(buf, b) ((buf[(b) >> 2] >> (((b) & 3u) * 8u)) & 0xffu)
#define Q8_LD16(buf, b) ((buf[(b) >> 2] >> (((b) & 2u) * 8u)) & 0xffffu)
#define Q8_LD32(buf, b) \
  (((b) & 2u) == 0u ? buf[(b) >> 2] : ((buf[(b) >> 2] >> 16) | (buf[((b) >> 2) + 1u] << 16)))

float q8_half(uint h) { return unpackHalf2x16(h).x; }
vec4 q8_s8x4(uint w) {
  return vec4(ivec4(int(w << 24) >> 24, int(w << 16) >> 24, int(w << 8) >> 24, int(w) >> 24));
}
float q8_s8(uint b) { return float(int(b << 24) >> 24); }

// Element e of a row whose first block is at byte `off`.
#define Q8_ELEM(buf, off, e) \
  (q8_half(Q8_LD16(buf, (off) + 34u * ((e) >> 5))) * q8_s8(Q8_LD8(buf, (off) + 34u * ((e) >> 5) + 2u + ((e) & 31u))))
// Elements e .. e + 3 (e % 4 == 0) of a row whose first block is at byte `off`.
#define Q8_VEC4(buf, off, e) \
  (q8_s8x4(Q8_LD32(buf, (off) + 34u * ((e) >> 5) + 2u + ((e) & 31u))) * q8_half(Q8_LD16(buf, (off) + 34u * ((e) >> 5))))

// The 17 halfwords of the block encoding x: h[0] = f16 d, h[1 + i] = q[2i] | q[2i+1] << 8.
void q8_quantize(in float x[32], out uint h[17]) {
  float amax = 0.0;
  for (uint i = 0u; i < 32u; ++i) amax = max(amax, abs(x[i]));
  const float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
  h[0] = packHalf2x16(vec2(d, 0.0)) & 0xffffu;
  for (uint i = 0u; i < 16u; ++i) {
    const float a = x[2u * i] * id, b = x[2u * i + 1u] * id;
    const int qa = int(sign(a) * floor(abs(a) + 0.5)), qb = int(sign(b) * floor(abs(b) + 0.5));
    h[1u + i] = (uint(qa) & 0xffu) | ((uint(qb) & 0xffu) << 8);
  }
}

// Writes the block h at byte o (even) of buf.
#define Q8_PUT(buf, o, h)                                                      \
  {                                                                            \
    const uint w_ = (o) >> 2;                                                  \
    if (((o) & 2u) == 0u) {                                                    \
      for (uint m_ = 0u; m_ < 8u; ++m_) buf[w_ + m_] = h[2u * m_] | (h[2u * m_ + 1u] << 16); \
      atomicAnd(buf[w_ + 8u], 0xffff0000u);                                    \
      atomicOr(buf[w_ + 8u], h[16]);                                           \
    } else {                                                                   \
      atomicAnd(buf[w_], 0x0000ffffu);                                         \
      atomicOr(buf[w_], h[0] << 16);                                           \
      for (uint m_ = 0u; m_ < 8u; ++m_) buf[w_ + 1u + m_] = h[1u + 2u * m_] | (h[2u + 2u * m_] << 16); \
    }                                                                          \
  }
