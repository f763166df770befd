#version 450
// The gated delta rule (gpu::backend::delta_net), sequential in tokens: one workgroup per
// (value head, sequence); lane l owns the state columns j = l, l + wg, ... (M[i][j] for all
// keys i, at (h*S + i)*S + j: consecutive lanes read consecutive floats) and updates them in
// place in the state buffer, token by token, so lanes never exchange data and need no
// barrier. Each lane computes the q/k norms and gates itself. A sequence may start from a
// checkpoint column (src) and copy its state to another after token ck_t. Reference:
// src/gpu/ref/ref_recurrent.cpp. (A chunked prefill form is future work.)
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Q { float qkv[]; };
layout(std430, binding = 1) readonly buffer B { float braw[]; };
layout(std430, binding = 2) readonly buffer A { float araw[]; };
layout(std430, binding = 3) readonly buffer Dt { float dt[]; };
layout(std430, binding = 4) readonly buffer Aa { float aa[]; };
layout(std430, binding = 5) buffer St { float st[]; };
layout(std430, binding = 6) readonly buffer I { int info[]; };
layout(std430, binding = 7) writeonly buffer O { float o[]; };
layout(push_constant) uniform P { push_delta_net p; };

float inv_norm(uint base, uint n) {
  float ss = 0.0;
  for (uint i = 0; i < n; ++i) ss = fma(qkv[base + i], qkv[base + i], ss);
  return 1.0 / max(sqrt(ss), p.eps);
}

void main() {
  const uint h = gl_WorkGroupID.x, s = gl_WorkGroupID.y, lane = gl_LocalInvocationID.x;
  const uint S = p.S, Cc = (2 * p.Hk + p.Hv) * S, hk = h % p.Hk;
  const uint e = (p.i_off >> 2) + s * 8;
  const uint t0 = uint(info[e]), n = uint(info[e + 1]), slot = uint(info[e + 2]), src = uint(info[e + 4]);
  const bool reset = info[e + 3] != 0;
  const int ck_t = info[e + 5];
  const uint mb = (p.s_off >> 2) + (slot * p.Hv + h) * S * S;
  const uint sb = (p.s_off >> 2) + (src * p.Hv + h) * S * S;
  const uint cb = (p.s_off >> 2) + (uint(max(info[e + 6], 0)) * p.Hv + h) * S * S;
  if (reset || src != slot)  // start from zero, or from a checkpoint's columns
    for (uint j = lane; j < S; j += gl_WorkGroupSize.x)
      for (uint i = 0; i < S; ++i) st[mb + i * S + j] = reset ? 0.0 : st[sb + i * S + j];
  const float dtb = dt[(p.dt_off >> 2) + h], ah = aa[(p.A_off >> 2) + h];
  for (uint t = t0; t < t0 + n; ++t) {
    const uint row = (p.qkv_off >> 2) + t * Cc;
    const uint qb = row + hk * S, kb = row + (p.Hk + hk) * S, vb = row + (2 * p.Hk + h) * S;
    const float qs = inv_norm(qb, S) / sqrt(float(S)), ks = inv_norm(kb, S);
    const float x = araw[(p.a_off >> 2) + t * p.Hv + h] + dtb;
    const float g = (x > 20.0 ? x : log(1.0 + exp(x))) * ah;
    const float decay = exp(g), beta = 1.0 / (1.0 + exp(-braw[(p.b_off >> 2) + t * p.Hv + h]));
    for (uint j = lane; j < S; j += gl_WorkGroupSize.x) {
      float sk = 0.0;
      for (uint i = 0; i < S; ++i) {
        const float m = st[mb + i * S + j] * decay;
        st[mb + i * S + j] = m;
        sk = fma(m, qkv[kb + i] * ks, sk);
      }
      const float d = beta * (qkv[vb + j] - sk);
      float acc = 0.0;
      for (uint i = 0; i < S; ++i) {
        const float m = fma(qkv[kb + i] * ks, d, st[mb + i * S + j]);
        st[mb + i * S + j] = m;
        acc = fma(m, qkv[qb + i] * qs, acc);
      }
      o[(p.o_off >> 2) + t * p.Hv * S + h * S + j] = acc;
      if (int(t) == ck_t)  // a checkpoint of this lane's columns after this token
        for (uint i = 0; i < S; ++i) st[cb + i * S + j] = st[mb + i * S + j];
    }
  }
}
