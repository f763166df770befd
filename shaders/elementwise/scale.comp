#version 450
// y[i] = x[i] * s, then softcap * tanh(y[i] / softcap) when softcap > 0 (Gemma's embedding
// scale and final logit soft-capping). Elementwise over n f32 elements; 2-D grid for large n.
// Reference: src/gpu/ref (scale).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform P { push_scale p; };

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  float v = x[(p.x_off >> 2) + i] * p.s;
  if (p.softcap > 0.0) v = p.softcap * tanh(clamp(v / p.softcap, -15.0, 15.0));
  y[(p.y_off >> 2) + i] = v;
}
