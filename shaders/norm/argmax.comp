#version 450
// out[r] = index of the maximum of x[r, :] (lowest index on ties, NaN skipped, 0 for a row of
// NaN: engine/sampler's argmax); one workgroup per row.
// Reference: src/gpu/ref (argmax).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float unused_w[]; };
layout(std430, binding = 2) writeonly buffer Y { int y[]; };
layout(push_constant) uniform P { push_rows p; };

shared float rv[256];
shared uint ri[256];

void main() {
  const uint lid = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x, row = wg_x();
  if (row >= p.n_rows) return;  // a spare group of a folded grid (uniform per workgroup)
  const uint xb = (p.x_off >> 2) + row * p.C;
  float best = -1.0 / 0.0;
  uint bi = 0xffffffffu;
  for (uint i = lid; i < p.C; i += n) {
    const float v = x[xb + i];
    if (!isnan(v) && (v > best || bi == 0xffffffffu)) { best = v; bi = i; }
  }
  rv[lid] = best;
  ri[lid] = bi;
  for (uint s = n / 2u; s > 0u; s >>= 1) {
    barrier();
    if (lid < s) {
      float ov = rv[lid + s];
      uint oi = ri[lid + s];
      if (oi != 0xffffffffu && (ri[lid] == 0xffffffffu || ov > rv[lid] || (ov == rv[lid] && oi < ri[lid]))) {
        rv[lid] = ov;
        ri[lid] = oi;
      }
    }
  }
  if (lid == 0u) y[(p.y_off >> 2) + row] = ri[0] == 0xffffffffu ? 0 : int(ri[0]);
}
