#version 450
// The weighted sum of each token's expert outputs (gpu::backend::moe_combine): y[t, c] =
// sum_s w[t, s] * x[t*k + s, c], slots added in order. One invocation per element of y
// {C, T}; 2-D grid for large n. Reference: src/gpu/ref (moe_combine).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { push_moe_combine p; };

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.n) return;
  const uint t = i / p.C, c = i % p.C;
  float acc = 0.0;
  for (uint s = 0u; s < p.k; ++s) acc += w[(p.w_off >> 2) + t * p.k + s] * x[(p.x_off >> 2) + (t * p.k + s) * p.C + c];
  y[(p.y_off >> 2) + i] = acc;
}
