#version 450
// y[i] = a[i] + b[i] over n f32 elements. Trivial kernel that proves the shader pipeline
// (compile, validate, embed, dispatch). Reference: src/gpu/ref.
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform P { push_elementwise p; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = a[i] + b[i];
}
