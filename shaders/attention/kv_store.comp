#version 450
// Paged KV cache write: cache[slot[t], e] = src[t, e] for k and v, W = Hkv*D per token.
// f32 caches: one thread per element; KV_F16: one thread per element pair (W even), packed
// into one 32-bit word; KV_Q8: one thread per 32-element block (W % 32 == 0), quantized to
// llama.cpp's block_q8_0 (common/kv_q8.glsl). Workgroup y = token. The bound cache windows
// hold slots [p.s_lo, p.s_lo + p.s_n) (a pool split over several windows runs one dispatch per
// window); tokens whose slot lies elsewhere are skipped. Reference: src/gpu/ref (kv_store).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"
#ifdef KV_Q8
#include "../common/kv_q8.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer K { float k[]; };
layout(std430, binding = 1) readonly buffer V { float v[]; };
layout(std430, binding = 2) readonly buffer S { int slot[]; };
#if defined(KV_Q8)
layout(std430, binding = 3) buffer KC { uint kc[]; };
layout(std430, binding = 4) buffer VC { uint vc[]; };
#elif defined(KV_F16)
layout(std430, binding = 3) writeonly buffer KC { uint kc[]; };
layout(std430, binding = 4) writeonly buffer VC { uint vc[]; };
#else
layout(std430, binding = 3) writeonly buffer KC { float kc[]; };
layout(std430, binding = 4) writeonly buffer VC { float vc[]; };
#endif
layout(push_constant) uniform P { push_kv_store p; };

void main() {
  const uint e = wg_x() * gl_WorkGroupSize.x + gl_LocalInvocationID.x, t = gl_WorkGroupID.y;  // x folds into z
  const uint s = uint(slot[(p.s_off >> 2) + t]) - p.s_lo;
  if (s >= p.s_n) return;
#if defined(KV_Q8)
  if (32u * e >= p.W) return;
  const uint src = t * p.W + 32u * e, dst = p.kc_off + (s * (p.W / 32u) + e) * 34u;
  float x[32];
  uint h[17];
  for (uint i = 0u; i < 32u; ++i) x[i] = k[(p.k_off >> 2) + src + i];
  q8_quantize(x, h);
  Q8_PUT(kc, dst, h);
  for (uint i = 0u; i < 32u; ++i) x[i] = v[(p.v_off >> 2) + src + i];
  q8_quantize(x, h);
  const uint dv = p.vc_off + (s * (p.W / 32u) + e) * 34u;
  Q8_PUT(vc, dv, h);
#elif defined(KV_F16)
  if (2u * e >= p.W) return;
  const uint src = t * p.W + 2u * e, dst = (s * p.W) / 2u + e;
  kc[(p.kc_off >> 2) + dst] = packHalf2x16(vec2(k[(p.k_off >> 2) + src], k[(p.k_off >> 2) + src + 1u]));
  vc[(p.vc_off >> 2) + dst] = packHalf2x16(vec2(v[(p.v_off >> 2) + src], v[(p.v_off >> 2) + src + 1u]));
#else
  if (e >= p.W) return;
  kc[(p.kc_off >> 2) + s * p.W + e] = k[(p.k_off >> 2) + t * p.W + e];
  vc[(p.vc_off >> 2) + s * p.W + e] = v[(p.v_off >> 2) + t * p.W + e];
#endif
}
