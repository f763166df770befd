#version 450
// Residual add fused with the next RMSNorm on storage buffers (GPUs): per row r,
//   x[r, :] += b[r, :];  y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w
// One workgroup per row; the sum of squares is reduced in shared memory (correct for any
// subgroup size). Each invocation writes back only the x elements it read, so x in place is
// safe. CPU devices use add_rms_norm_texel.comp. Reference: gpu::backend::add_rms_norm
// (add, then rms_norm).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer Wt { float w[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { push_add_norm_ssbo p; };

shared float red[256];

void main() {
  const uint lid = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x, row = wg_x();
  if (row >= p.n_rows) return;  // a spare group of a folded grid (uniform per workgroup)
  const uint xb = (p.x_off >> 2) + row * p.C, bb = (p.b_off >> 2) + row * p.C;
  const uint yb = (p.y_off >> 2) + row * p.C;
  float ss = 0.0;
  for (uint i = lid; i < p.C; i += n) {
    const float v = x[xb + i] + b[bb + i];
    x[xb + i] = v;
    ss += v * v;
  }
  red[lid] = ss;
  for (uint s = n / 2u; s > 0u; s >>= 1) {
    barrier();
    if (lid < s) red[lid] += red[lid + s];
  }
  barrier();
  const float scale = inversesqrt(red[0] / float(p.C) + p.eps);
  for (uint i = lid; i < p.C; i += n) y[yb + i] = x[xb + i] * scale * w[(p.w_off >> 2) + i];
}
