#version 450
// Paged KV cache write: cache[slot[t], e] = src[t, e] for k and v, W = Hkv*D per token.
// f32 caches: one thread per element; KV_F16: one thread per element pair (W even), packed
// into one 32-bit word. Workgroup y = token. Reference: src/gpu/ref (kv_store).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer K { float k[]; };
layout(std430, binding = 1) readonly buffer V { float v[]; };
layout(std430, binding = 2) readonly buffer S { int slot[]; };
#ifdef KV_F16
layout(std430, binding = 3) writeonly buffer KC { uint kc[]; };
layout(std430, binding = 4) writeonly buffer VC { uint vc[]; };
#else
layout(std430, binding = 3) writeonly buffer KC { float kc[]; };
layout(std430, binding = 4) writeonly buffer VC { float vc[]; };
#endif
layout(push_constant) uniform P { push_kv_store p; };

void main() {
  const uint e = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
  const uint s = uint(slot[(p.s_off >> 2) + t]);
#ifdef KV_F16
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
