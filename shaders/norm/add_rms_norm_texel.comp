#version 450
// Residual add fused with the next RMSNorm, for CPU devices (lavapipe): per row r,
//   x[r, :] += b[r, :];  y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w
// One invocation per row, no barriers (as rms_norm_texel.comp). x and b are read through
// texel views (bindings 9 and 10, vec4), w through binding 8 (f32 bits in 16-byte texels);
// x is written through storage binding 0 and y through binding 1. push_add_norm: x_t, b_t,
// w_t are TEXEL indices, x_off and y_off bytes; C % 4 == 0. Each invocation reads an element
// of its row before it writes that element and never reads it again, so writing x in place
// under the texel view is safe. One dispatch instead of two: on lavapipe every dispatch costs
// ~80 us of thread hand-offs whatever its size (docs/BENCHMARKS.md).
// Reference: src/gpu/backend.hpp (add_rms_norm: add, then rms_norm).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer X { vec4 xo[]; };
layout(std430, binding = 1) writeonly buffer Y { vec4 y[]; };
layout(binding = 8) uniform usamplerBuffer wt;
layout(binding = 9) uniform samplerBuffer xt;
layout(binding = 10) uniform samplerBuffer bt;
layout(push_constant) uniform P { push_add_norm p; };

void main() {
  const uint r = wg_x() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (r >= p.n_rows) return;
  const uint C4 = p.C / 4u, xb = p.x_t + r * C4, bb = p.b_t + r * C4;
  vec4 ss = vec4(0.0);
  for (uint i = 0u; i < C4; ++i) {
    const vec4 v = texelFetch(xt, int(xb + i)) + texelFetch(bt, int(bb + i));
    ss = fma(v, v, ss);
  }
  const float scale = inversesqrt((ss.x + ss.y + ss.z + ss.w) / float(p.C) + p.eps);
  const uint xo0 = (p.x_off >> 4) + r * C4, yo0 = (p.y_off >> 4) + r * C4;
  for (uint i = 0u; i < C4; ++i) {
    const vec4 v = texelFetch(xt, int(xb + i)) + texelFetch(bt, int(bb + i));
    xo[xo0 + i] = v;
    y[yo0 + i] = v * scale * uintBitsToFloat(texelFetch(wt, int(p.w_t + i)));
  }
}
