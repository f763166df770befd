#version 450
// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w for CPU devices (lavapipe): one
// invocation per row, no barriers (the shared-memory reduction of rms_norm.comp costs a
// coroutine switch per barrier there); x (binding 9, vec4 texels) and w (binding 8, f32 bits
// in 16-byte texels) through texel views, y through a storage buffer (binding 0). push_rows
// with x_off and w_off as TEXEL indices and y_off in bytes; C % 4 == 0. y may alias x: each
// invocation reads its row completely before writing it. Reference: src/gpu/ref (rms_norm).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Y { vec4 y[]; };
layout(binding = 8) uniform usamplerBuffer wt;
layout(binding = 9) uniform samplerBuffer xt;
layout(push_constant) uniform P { push_rows p; };

void main() {
  const uint r = wg_x() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (r >= p.n_rows) return;
  const uint C4 = p.C / 4u, xb = p.x_off + r * C4;
  vec4 ss = vec4(0.0);
  for (uint i = 0u; i < C4; ++i) {
    const vec4 v = texelFetch(xt, int(xb + i));
    ss = fma(v, v, ss);
  }
  const float scale = inversesqrt((ss.x + ss.y + ss.z + ss.w) / float(p.C) + p.eps);
  const uint yb = (p.y_off >> 4) + r * C4;
  for (uint i = 0u; i < C4; ++i) y[yb + i] = texelFetch(xt, int(xb + i)) * scale * uintBitsToFloat(texelFetch(wt, int(p.w_off + i)));
}
