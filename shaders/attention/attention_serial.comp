#version 450
// Paged causal attention with GQA, barrier-free variant for CPU devices (lavapipe runs
// invocations as SIMD lanes, where barriers and shared memory are expensive): one
// invocation per (query head h, token t) walks keys 0..pos[t] with online softmax, holding
// q and the output in registers; K/V rows are read as vec4. Requires D % 4 == 0, D <= 128.
// Same contract and push constants as attention.comp. Reference: src/gpu/ref (attention).
// KV_Q8: q8_0 caches (common/kv_q8.glsl), each vec4 dequantized from its block; CPU devices
// run q8_0 caches here (the texel variant reads 16-byte texels, which 34-byte blocks are not).
// Sliding window (p.window > 0): keys from pos[t] - window + 1 only; p.softcap > 0: scores
// (after p.scale) pass through softcap * tanh(score / softcap) (Gemma 2). p.has_sink: as
// attention.comp (sinks at binding 7).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"
#ifdef KV_Q8
#include "../common/kv_q8.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Q { vec4 q[]; };
#if defined(KV_Q8)
layout(std430, binding = 1) readonly buffer KC { uint kc[]; };
layout(std430, binding = 2) readonly buffer VC { uint vc[]; };
#elif defined(KV_F16)
layout(std430, binding = 1) readonly buffer KC { uvec2 kc[]; };
layout(std430, binding = 2) readonly buffer VC { uvec2 vc[]; };
#else
layout(std430, binding = 1) readonly buffer KC { vec4 kc[]; };
layout(std430, binding = 2) readonly buffer VC { vec4 vc[]; };
#endif
layout(std430, binding = 3) readonly buffer BT { int bt[]; };
layout(std430, binding = 4) readonly buffer SQ { int seq[]; };
layout(std430, binding = 5) readonly buffer PS { int pos[]; };
layout(std430, binding = 6) writeonly buffer O { vec4 o[]; };
layout(std430, binding = 7) readonly buffer SK { float sinks[]; };
layout(push_constant) uniform P { push_attention p; };

#if defined(KV_Q8)
vec4 ldk(uint i) { return Q8_VEC4(kc, p.k_off, 4u * i); }
vec4 ldv(uint i) { return Q8_VEC4(vc, p.v_off, 4u * i); }
#elif defined(KV_F16)
vec4 ldk(uint i) { uvec2 u = kc[(p.k_off >> 3) + i]; return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)); }
vec4 ldv(uint i) { uvec2 u = vc[(p.v_off >> 3) + i]; return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)); }
#else
vec4 ldk(uint i) { return kc[(p.k_off >> 4) + i]; }
vec4 ldv(uint i) { return vc[(p.v_off >> 4) + i]; }
#endif

void main() {
  const uint g = gl_GlobalInvocationID.x;
  if (g >= p.H * p.T) return;
  const uint h = g % p.H, t = g / p.H, D4 = p.D / 4u;
  const uint W4 = p.Hkv * D4, kv4 = (h / (p.H / p.Hkv)) * D4;
  const uint s = uint(seq[(p.seq_off >> 2) + t]);
  const int P = pos[(p.pos_off >> 2) + t];
  const uint qb = (p.q_off >> 4) + (t * p.H + h) * D4;
  vec4 qv[32], acc[32];
  for (uint i = 0u; i < 32u; ++i) {
    qv[i] = i < D4 ? q[qb + i] * p.scale : vec4(0.0);
    acc[i] = vec4(0.0);
  }
  float m = -1.0 / 0.0, l = 0.0;
  for (int j = p.window > 0u ? max(0, P - int(p.window) + 1) : 0; j <= P; ++j) {
    const uint row = uint(bt[(p.bt_off >> 2) + s * p.maxb + uint(j) / p.B]) * p.B + uint(j) % p.B;
    const uint kb = row * W4 + kv4;
    float sc = 0.0;
    for (uint i = 0u; i < 32u; ++i)
      if (i < D4) sc += dot(qv[i], ldk(kb + i));
    if (p.softcap > 0.0) sc = p.softcap * tanh(clamp(sc / p.softcap, -15.0, 15.0));
    const float mnew = max(m, sc), corr = exp(m - mnew), pj = exp(sc - mnew);
    l = l * corr + pj;
    m = mnew;
    for (uint i = 0u; i < 32u; ++i)
      if (i < D4) acc[i] = acc[i] * corr + pj * ldv(kb + i);
  }
  if (p.has_sink != 0u) l += exp(sinks[(p.sink_off >> 2) + h] - m);  // the sink: denominator only
  const uint ob = (p.o_off >> 4) + (t * p.H + h) * D4;
  for (uint i = 0u; i < 32u; ++i)
    if (i < D4) o[ob + i] = acc[i] / l;
}
