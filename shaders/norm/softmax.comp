#version 450
// Row softmax over C elements: one workgroup per row, shared-memory max and sum reductions.
// Reference: src/gpu/ref (softmax).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float unused_w[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(push_constant) uniform P { push_rows p; };

shared float red[256];

void main() {
  const uint lid = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x, row = wg_x();
  if (row >= p.n_rows) return;  // a spare group of a folded grid (uniform per workgroup)
  const uint xb = (p.x_off >> 2) + row * p.C, yb = (p.y_off >> 2) + row * p.C;
  float m = -1.0 / 0.0;
  for (uint i = lid; i < p.C; i += n) m = max(m, x[xb + i]);
  red[lid] = m;
  for (uint s = n / 2u; s > 0u; s >>= 1) {
    barrier();
    if (lid < s) red[lid] = max(red[lid], red[lid + s]);
  }
  barrier();
  m = red[0];
  barrier();
  float sum = 0.0;
  for (uint i = lid; i < p.C; i += n) sum += exp(x[xb + i] - m);
  red[lid] = sum;
  for (uint s = n / 2u; s > 0u; s >>= 1) {
    barrier();
    if (lid < s) red[lid] += red[lid + s];
  }
  barrier();
  const float inv = 1.0 / red[0];
  for (uint i = lid; i < p.C; i += n) y[yb + i] = exp(x[xb + i] - m) * inv;
}
