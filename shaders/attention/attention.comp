#version 450
// Paged causal attention with GQA over a flattened batch of tokens from several sequences.
// One workgroup per (query head h = x, token t = y). Keys 0..pos[t] of sequence seq[t] are
// visited in chunks of WG: each thread scores one key (dot over D), the workgroup reduces
// max/sum in shared memory, and each thread accumulates its output dims (d = lid + i*WG)
// with online softmax rescaling. Key p lives in cache row bt[s*maxb + p/B]*B + p%B.
// Limits: D <= 512, D <= 8*WG (the host gives D = 512 a WG of 64). KV_F16: caches hold packed halves; KV_Q8: q8_0 blocks
// (common/kv_q8.glsl; D % 32 == 0), k_off/v_off even byte offsets.
// Reference: src/gpu/ref (attention).
// Sliding window (p.window > 0): keys from pos[t] - window + 1 only; p.softcap > 0: scores
// (after p.scale) pass through softcap * tanh(score / softcap) (Gemma 2). p.has_sink: head h's
// sink logit (binding 7) joins the softmax denominator (gpt-oss), out = acc / (l + e^(sink - m)).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"
#ifdef KV_Q8
#include "../common/kv_q8.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
#if defined(KV_F16) || defined(KV_Q8)
layout(std430, binding = 1) readonly buffer KC { uint kc[]; };
layout(std430, binding = 2) readonly buffer VC { uint vc[]; };
#else
layout(std430, binding = 1) readonly buffer KC { float kc[]; };
layout(std430, binding = 2) readonly buffer VC { float vc[]; };
#endif
layout(std430, binding = 3) readonly buffer BT { int bt[]; };
layout(std430, binding = 4) readonly buffer SQ { int seq[]; };
layout(std430, binding = 5) readonly buffer PS { int pos[]; };
layout(std430, binding = 6) writeonly buffer O { float o[]; };
layout(std430, binding = 7) readonly buffer SK { float sinks[]; };
layout(push_constant) uniform P { push_attention p; };

shared float qs[512];  // q of the head (D <= 512); shared memory 5 KiB in all
shared float red[256];
shared float ps[256];
shared uint rows[256];

#if defined(KV_Q8)
float ldv(uint i) { return Q8_ELEM(vc, p.v_off, i); }
// q . K row (D elements from element i0, a block boundary), a block's scale at a time.
float dotk(uint i0) {
  float dt = 0.0;
  for (uint c = 0u; c < p.D / 32u; ++c) {
    const uint b = p.k_off + 34u * ((i0 >> 5) + c);
    float bd = 0.0;
    for (uint j = 0u; j < 8u; ++j) {
      const uint d = 32u * c + 4u * j;
      bd += dot(vec4(qs[d], qs[d + 1u], qs[d + 2u], qs[d + 3u]), q8_s8x4(Q8_LD32(kc, b + 2u + 4u * j)));
    }
    dt += bd * q8_half(Q8_LD16(kc, b));
  }
  return dt;
}
#elif defined(KV_F16)
float ldk(uint i) { uint b = (p.k_off >> 1) + i; vec2 h = unpackHalf2x16(kc[b >> 1]); return (b & 1u) != 0u ? h.y : h.x; }
float ldv(uint i) { uint b = (p.v_off >> 1) + i; vec2 h = unpackHalf2x16(vc[b >> 1]); return (b & 1u) != 0u ? h.y : h.x; }
#else
float ldk(uint i) { return kc[(p.k_off >> 2) + i]; }
float ldv(uint i) { return vc[(p.v_off >> 2) + i]; }
#endif


void main() {
  const uint lid = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
  const uint W = p.Hkv * p.D, kvoff = (h / (p.H / p.Hkv)) * p.D;
  const uint s = uint(seq[(p.seq_off >> 2) + t]);
  const int P = pos[(p.pos_off >> 2) + t];
  const uint qb = (p.q_off >> 2) + (t * p.H + h) * p.D;
  for (uint d = lid; d < p.D; d += n) qs[d] = q[qb + d];

  float m = -1.0 / 0.0, l = 0.0;
  float acc[8];
  for (uint i = 0u; i < 8u; ++i) acc[i] = 0.0;

  for (int j0 = p.window > 0u ? max(0, P - int(p.window) + 1) : 0; j0 <= P; j0 += int(n)) {
    barrier();  // qs ready; previous chunk's ps/rows consumed
    const int j = j0 + int(lid);
    float sc = -1.0 / 0.0;
    if (j <= P) {
      const uint row = uint(bt[(p.bt_off >> 2) + s * p.maxb + uint(j) / p.B]) * p.B + uint(j) % p.B;
      rows[lid] = row;
      float dt = 0.0;
#ifdef KV_Q8
      dt = dotk(row * W + kvoff);
#else
      for (uint d = 0u; d < p.D; ++d) dt += qs[d] * ldk(row * W + kvoff + d);
#endif
      sc = dt * p.scale;
      if (p.softcap > 0.0) sc = p.softcap * tanh(clamp(sc / p.softcap, -15.0, 15.0));
    }
    red[lid] = sc;
    for (uint st = n / 2u; st > 0u; st >>= 1) {
      barrier();
      if (lid < st) red[lid] = max(red[lid], red[lid + st]);
    }
    barrier();
    const float mnew = max(m, red[0]);
    barrier();
    const float pj = j <= P ? exp(sc - mnew) : 0.0;
    ps[lid] = pj;
    red[lid] = pj;
    for (uint st = n / 2u; st > 0u; st >>= 1) {
      barrier();
      if (lid < st) red[lid] += red[lid + st];
    }
    barrier();
    const float corr = exp(m - mnew);
    l = l * corr + red[0];
    m = mnew;
    const uint cnt = uint(min(int(n), P + 1 - j0));
    for (uint i = 0u; i < 8u; ++i) {
      const uint d = lid + i * n;
      if (d < p.D) {
        float a = acc[i] * corr;
        for (uint jj = 0u; jj < cnt; ++jj) a += ps[jj] * ldv(rows[jj] * W + kvoff + d);
        acc[i] = a;
      }
    }
  }
  if (p.has_sink != 0u) l += exp(sinks[(p.sink_off >> 2) + h] - m);  // the sink: denominator only
  const uint ob = (p.o_off >> 2) + (t * p.H + h) * p.D;
  for (uint i = 0u; i < 8u; ++i) {
    const uint d = lid + i * n;
    if (d < p.D) o[ob + d] = acc[i] / l;
  }
}
