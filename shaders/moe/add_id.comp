#version 450
// Per-expert bias (gpu::backend::add_id, ggml_add_id): y[r, n] = x[r, n] + b[ids[r], n] for the
// (token, slot) rows r of x and y {N, R}, b {N, E} f32 (ids clamped below E). With SWIGLU_OAI
// instead (gpu::backend::swiglu_oai, gpt-oss): rows [gate; up] of x {2N, R} give y {N, R} =
// g * sigmoid(alpha * g) * (u + 1), g = min(gate, limit), u = clamp(up, -limit, limit).
// One invocation per element of y; 2-D grid for large n. Reference: src/gpu/ref.
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer I { int ids[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { push_add_id p; };

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.n) return;
  const uint r = i / p.N, c = i % p.N;
#ifdef SWIGLU_OAI
  const float g = min(x[(p.x_off >> 2) + r * 2u * p.N + c], p.limit);
  const float u = clamp(x[(p.x_off >> 2) + r * 2u * p.N + p.N + c], -p.limit, p.limit);
  y[(p.y_off >> 2) + i] = g / (1.0 + exp(-p.alpha * g)) * (u + 1.0);
#else
  const uint e = uint(clamp(ids[(p.i_off >> 2) + r], 0, int(p.E) - 1));
  y[(p.y_off >> 2) + i] = x[(p.x_off >> 2) + i] + b[(p.b_off >> 2) + e * p.N + c];
#endif
}
