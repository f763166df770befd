#version 450
// Paged causal attention with GQA for CPU devices (lavapipe), reading q and the K/V cache
// through uniform texel buffers: same contract as attention.comp, push constants as
// push_attention except that q_off, k_off and v_off are 16-byte TEXEL indices into the views
// bound at 9 (q, vec4), 8 (K) and 10 (V) (f32 cache: one texel = 4 values; KV_F16: 8 halves);
// storage bindings: 0 block table, 1 seq, 2 pos, 3 out.
// One invocation per (group of GI query heads sharing a KV head, token t) walks keys
// 0..pos[t] four at a time with online softmax (one rescale per four keys), q and the
// outputs in registers; each K/V texel fetched serves GI heads (GQA models: GI = H / Hkv up
// to 4; at SmolLM2's 9/3 heads, 1.6x less time per call while serving 16 streams). Each
// group fetches all its K texels, then scores, then fetches all its V texels, then
// accumulates: on lavapipe a texel fetch is a call that clobbers the vector registers, so
// arithmetic is kept out from between fetches. Requires D % 8 == 0 and D <= 128 (D4 = D / 4
// is specialization constant 2).
// Reference: src/gpu/ref (attention).
// Sliding window (p.window > 0): keys from pos[t] - window + 1 only; p.softcap > 0: scores
// (after p.scale) pass through softcap * tanh(score / softcap) (Gemma 2). p.has_sink: as
// attention.comp (sinks at storage binding 4).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 2) const uint D4 = 16;  // head dim / 4
layout(constant_id = 3) const uint GI = 1;   // query heads per invocation; divides H / Hkv

layout(std430, binding = 0) readonly buffer BT { int bt[]; };
layout(std430, binding = 1) readonly buffer SQ { int seq[]; };
layout(std430, binding = 2) readonly buffer PS { int pos[]; };
layout(std430, binding = 3) writeonly buffer O { vec4 o[]; };
layout(std430, binding = 4) readonly buffer SK { float sinks[]; };
layout(binding = 8) uniform usamplerBuffer kt;
layout(binding = 9) uniform samplerBuffer qt;
layout(binding = 10) uniform usamplerBuffer vt;
layout(push_constant) uniform P { push_attention p; };

#ifdef KV_F16
#define TPR (D4 / 2u)  // texels per head row: 8 halves each
void load_row(usamplerBuffer b, uint base, out vec4 r[D4]) {
  [[unroll]] for (uint i = 0u; i < D4 / 2u; ++i) {
    const uvec4 u = texelFetch(b, int(base + i));
    r[2u * i] = vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
    r[2u * i + 1u] = vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));
  }
}
#else
#define TPR D4
void load_row(usamplerBuffer b, uint base, out vec4 r[D4]) {
  [[unroll]] for (uint i = 0u; i < D4; ++i) r[i] = uintBitsToFloat(texelFetch(b, int(base + i)));
}
#endif

void main() {
  const uint NG = p.H / GI;  // query-head groups per token
  const uint g = gl_GlobalInvocationID.x;
  if (g >= NG * p.T) return;
  const uint h0 = (g % NG) * GI, t = g / NG;  // heads h0 .. h0 + GI - 1 share one KV head
  const uint row_texels = p.Hkv * TPR, head_texel = (h0 / (p.H / p.Hkv)) * TPR;
  const uint s = uint(seq[(p.seq_off >> 2) + t]);
  const int P = pos[(p.pos_off >> 2) + t];
  vec4 qv[GI][D4], acc[GI][D4];
  float m[GI], l[GI];
  [[unroll]] for (uint e = 0u; e < GI; ++e) {
    [[unroll]] for (uint i = 0u; i < D4; ++i) {
      qv[e][i] = texelFetch(qt, int(p.q_off + (t * p.H + h0 + e) * D4 + i)) * p.scale;
      acc[e][i] = vec4(0.0);
    }
    m[e] = -1.0 / 0.0;
    l[e] = 0.0;
  }
  for (int j0 = p.window > 0u ? max(0, P - int(p.window) + 1) : 0; j0 <= P; j0 += 4) {
    uint kb[4];  // cache texel of each key's head row (keys past P repeat key P, masked)
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
      const uint j = uint(min(j0 + int(c), P));
      const uint row = uint(bt[(p.bt_off >> 2) + s * p.maxb + j / p.B]) * p.B + j % p.B;
      kb[c] = row * row_texels + head_texel;
    }
    vec4 kr[4][D4];
    [[unroll]] for (uint c = 0u; c < 4u; ++c) load_row(kt, p.k_off + kb[c], kr[c]);
    float pc[GI][4], corr[GI];
    [[unroll]] for (uint e = 0u; e < GI; ++e) {
      float sc[4];
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        float d = 0.0;
        [[unroll]] for (uint i = 0u; i < D4; ++i) d += dot(qv[e][i], kr[c][i]);
        if (p.softcap > 0.0) d = p.softcap * tanh(clamp(d / p.softcap, -15.0, 15.0));
        sc[c] = j0 + int(c) <= P ? d : -1.0 / 0.0;
      }
      const float mnew = max(m[e], max(max(sc[0], sc[1]), max(sc[2], sc[3])));
      corr[e] = exp(m[e] - mnew);
      [[unroll]] for (uint c = 0u; c < 4u; ++c) pc[e][c] = exp(sc[c] - mnew);
      l[e] = l[e] * corr[e] + (pc[e][0] + pc[e][1]) + (pc[e][2] + pc[e][3]);
      m[e] = mnew;
    }
    vec4 vr[4][D4];
    [[unroll]] for (uint c = 0u; c < 4u; ++c) load_row(vt, p.v_off + kb[c], vr[c]);
    [[unroll]] for (uint e = 0u; e < GI; ++e)
      [[unroll]] for (uint i = 0u; i < D4; ++i)
        acc[e][i] = acc[e][i] * corr[e] + pc[e][0] * vr[0][i] + pc[e][1] * vr[1][i] + pc[e][2] * vr[2][i] + pc[e][3] * vr[3][i];
  }
  [[unroll]] for (uint e = 0u; e < GI; ++e) {
    if (p.has_sink != 0u) l[e] += exp(sinks[(p.sink_off >> 2) + h0 + e] - m[e]);  // the sink: denominator only
    const uint ob = (p.o_off >> 4) + (t * p.H + h0 + e) * D4;
    [[unroll]] for (uint i = 0u; i < D4; ++i) o[ob + i] = acc[e][i] / l[e];
  }
}
