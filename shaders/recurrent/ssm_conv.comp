#version 450
// Causal depthwise conv with a rolling state, then silu (gpu::backend::ssm_conv): one
// invocation per (channel, sequence) walks the sequence's tokens in order, its last Kc-1
// inputs in registers (Kc <= 8; read from column src), and writes them back as the new state
// (and to a checkpoint column after token ck_t). Reference:
// src/gpu/ref/ref_recurrent.cpp.
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) buffer St { float st[]; };
layout(std430, binding = 3) readonly buffer I { int info[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { push_ssm_conv p; };

void main() {
  const uint c = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  const uint s = gl_WorkGroupID.y;
  if (c >= p.Cc || s >= p.n_seqs) return;
  const uint e = (p.i_off >> 2) + s * 8;
  const uint t0 = uint(info[e]), n = uint(info[e + 1]), slot = uint(info[e + 2]);
  const bool reset = info[e + 3] != 0;
  const int ck_t = info[e + 5];
  const uint W = p.Kc - 1;
  const uint sb = (p.s_off >> 2) + slot * W * p.Cc + c;
  const uint src = (p.s_off >> 2) + uint(info[e + 4]) * W * p.Cc + c;
  const uint ckb = (p.s_off >> 2) + uint(max(info[e + 6], 0)) * W * p.Cc + c;
  float u[8];
  for (uint j = 0; j < 8; ++j) u[j] = 0.0;
  for (uint j = 0; j < W; ++j) u[j] = reset ? 0.0 : st[src + j * p.Cc];
  float wc[8];
  for (uint j = 0; j < p.Kc; ++j) wc[j] = w[(p.w_off >> 2) + c * p.Kc + j];
  for (uint t = t0; t < t0 + n; ++t) {
    u[W] = x[(p.x_off >> 2) + t * p.Cc + c];
    float acc = 0.0;
    for (uint j = 0; j < p.Kc; ++j) acc = fma(wc[j], u[j], acc);
    y[(p.y_off >> 2) + t * p.Cc + c] = acc / (1.0 + exp(-acc));
    for (uint j = 0; j < W; ++j) u[j] = u[j + 1];
    if (int(t) == ck_t)  // a checkpoint of the state after this token
      for (uint j = 0; j < W; ++j) st[ckb + j * p.Cc] = u[j];
  }
  for (uint j = 0; j < W; ++j) st[sb + j * p.Cc] = u[j];
}
