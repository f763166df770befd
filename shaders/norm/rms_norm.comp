#version 450
// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w ; one workgroup per row, shared-memory
// reduction (correct for any subgroup size). y may alias x. Reference: src/gpu/ref (rms_norm).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(push_constant) uniform P { push_rows p; };

shared float red[256];

void main() {
  const uint lid = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x, row = wg_x();
  if (row >= p.n_rows) return;  // a spare group of a folded grid (uniform per workgroup)
  const uint xb = (p.x_off >> 2) + row * p.C, yb = (p.y_off >> 2) + row * p.C;
  float ss = 0.0;
  for (uint i = lid; i < p.C; i += n) ss += x[xb + i] * x[xb + i];
  red[lid] = ss;
  for (uint s = n / 2u; s > 0u; s >>= 1) {
    barrier();
    if (lid < s) red[lid] += red[lid + s];
  }
  barrier();
  const float scale = inversesqrt(red[0] / float(p.C) + p.eps);
  for (uint i = lid; i < p.C; i += n) y[yb + i] = x[xb + i] * scale * w[(p.w_off >> 2) + i];
}
