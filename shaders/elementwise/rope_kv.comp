#version 450
// The attention inputs of a step in one dispatch: per-head RMSNorm of q and k (flags bit 1;
// Qwen3), RoPE of q and k, and k and v written into the paged cache at slot[t]. One
// workgroup per (head row, token): rows [0, H) are q heads (rotated in place), [H, H + Hkv)
// k heads and [H + Hkv, H + 2 Hkv) v heads (into the cache; k itself is left as it was).
// The head row is staged in shared memory (normed there), then each invocation writes whole
// element pairs (2j, 2j+1), so an f16 cache word is written by one invocation; barriers sit
// in workgroup-uniform control flow. theta = freq_scale * pos * base^(-2i/n_dims) / ff[i];
// normal mode rotates (2i, 2i+1), neox (i, i + n_dims/2); dims past n_dims are copied.
// Norm weights through texel bindings 9 (q) and 10 (k), vec4 of f32.
// KV_Q8 (q8_0 cache, D % 32 == 0): the k/v head row is staged again after rotation and each
// invocation quantizes whole 32-element blocks (common/kv_q8.glsl).
// Reference: gpu::backend::rope_kv_store (rms_norm, rope, rope, kv_store).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"
#ifdef KV_Q8
#include "../common/kv_q8.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
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
layout(std430, binding = 5) readonly buffer Pos { int pos[]; };
layout(std430, binding = 6) readonly buffer S { int slot[]; };
layout(std430, binding = 7) readonly buffer F { float ff[]; };
layout(binding = 9) uniform samplerBuffer qnt;
layout(binding = 10) uniform usamplerBuffer knt;
layout(push_constant) uniform P { push_rope_kv p; };

shared float row[512];  // D <= 512 (Gemma 4's global layers)
shared float red[256];
#ifdef KV_Q8
shared float outrow[512];  // the rotated k / v row, quantized by blocks
#endif

float rotated(uint e, float ps) {
  if (e >= p.n_dims) return row[e];
  const uint hd = p.n_dims / 2u;
  uint i, partner;
  bool first;
  if (p.mode == 0u) {
    i = e / 2u; first = (e & 1u) == 0u; partner = e ^ 1u;
  } else {
    first = e < hd; i = first ? e : e - hd; partner = first ? e + hd : e - hd;
  }
  float theta = p.freq_scale * ps * pow(p.freq_base, -2.0 * float(i) / float(p.n_dims));
  if ((p.flags & 1u) != 0u) theta /= ff[(p.f_off >> 2) + i];
  const float c = cos(theta), s = sin(theta);
  return first ? row[e] * c - row[partner] * s : row[partner] * s + row[e] * c;
}

void main() {
  const uint hr = wg_x(), t = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  const uint D = p.D, W = p.Hkv * D;
  if (hr >= p.H + 2u * p.Hkv) return;  // a spare group of a grid folded into z (uniform per workgroup)
  const uint kind = hr < p.H ? 0u : (hr < p.H + p.Hkv ? 1u : 2u);  // q, k, v
  const uint h = kind == 0u ? hr : (kind == 1u ? hr - p.H : hr - p.H - p.Hkv);
  const uint src = kind == 0u ? (p.q_off >> 2) + (t * p.H + h) * D
                              : ((kind == 1u ? p.k_off : p.v_off) >> 2) + t * W + h * D;
  for (uint e = lid; e < D; e += n) row[e] = kind == 0u ? q[src + e] : (kind == 1u ? k[src + e] : v[src + e]);
  if ((p.flags & 2u) != 0u && kind != 2u) {  // per-head RMSNorm (uniform per workgroup)
    barrier();
    float ss = 0.0;
    for (uint e = lid; e < D; e += n) ss += row[e] * row[e];
    red[lid] = ss;
    for (uint s = n / 2u; s > 0u; s >>= 1) {
      barrier();
      if (lid < s) red[lid] += red[lid + s];
    }
    barrier();
    const float scale = inversesqrt(red[0] / float(D) + p.eps);
    for (uint e = lid; e < D; e += n) {
      const uint wt = (kind == 0u ? p.qn_t : p.kn_t) + e / 4u;
      const float w = kind == 0u ? texelFetch(qnt, int(wt))[e % 4u] : uintBitsToFloat(texelFetch(knt, int(wt))[e % 4u]);
      // Each invocation rescales the elements it read for ss, so no barrier before this write.
      row[e] = row[e] * scale * w;
    }
  }
  barrier();
  const float ps = float(pos[(p.p_off >> 2) + t]);
  const uint cache = uint(slot[(p.s_off >> 2) + t]) * W + h * D;
  for (uint j = lid; j < D / 2u; j += n) {
    const uint e = 2u * j;
    const float a = kind == 2u ? row[e] : rotated(e, ps), b = kind == 2u ? row[e + 1u] : rotated(e + 1u, ps);
    if (kind == 0u) {
      q[src + e] = a;
      q[src + e + 1u] = b;
      continue;
    }
#if defined(KV_Q8)
    outrow[e] = a;
    outrow[e + 1u] = b;
#elif defined(KV_F16)
    const uint word = packHalf2x16(vec2(a, b));
    if (kind == 1u) kc[(p.kc_off >> 2) + cache / 2u + j] = word;
    else vc[(p.vc_off >> 2) + cache / 2u + j] = word;
#else
    if (kind == 1u) {
      kc[(p.kc_off >> 2) + cache + e] = a;
      kc[(p.kc_off >> 2) + cache + e + 1u] = b;
    } else {
      vc[(p.vc_off >> 2) + cache + e] = a;
      vc[(p.vc_off >> 2) + cache + e + 1u] = b;
    }
#endif
  }
#ifdef KV_Q8
  barrier();  // kind is uniform per workgroup, so this is too
  if (kind == 0u) return;
  for (uint blk = lid; blk < D / 32u; blk += n) {
    float x[32];
    uint hq[17];
    for (uint i = 0u; i < 32u; ++i) x[i] = outrow[32u * blk + i];
    q8_quantize(x, hq);
    const uint o = (kind == 1u ? p.kc_off : p.vc_off) + (uint(slot[(p.s_off >> 2) + t]) * (W / 32u) + h * (D / 32u) + blk) * 34u;
    if (kind == 1u) Q8_PUT(kc, o, hq) else Q8_PUT(vc, o, hq)
  }
#endif
}
