#version 450
// y[i] = a[i] + b[i % b_n] (b_n == n, or one broadcast row); with SILU_MUL defined
// y[i] = silu(a[i]) * b[i]. CPU-device variant of add.comp: one invocation per 4 elements,
// a (binding 9, vec4 texels) and b (binding 8, f32 bits in 16-byte texels) through texel
// views, y through a storage buffer (binding 0). push_elementwise with a_off and b_off as
// TEXEL indices and y_off in bytes; n and b_n multiples of 4; 2-D grid for large n.
// Reference: src/gpu/ref (add, silu_mul).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Y { vec4 y[]; };
layout(binding = 8) uniform usamplerBuffer bt;
layout(binding = 9) uniform samplerBuffer at;
layout(push_constant) uniform P { push_elementwise p; };

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;  // vec4 index
  if (i >= p.n / 4u) return;
  const vec4 av = texelFetch(at, int(p.a_off + i));
  const vec4 bv = uintBitsToFloat(texelFetch(bt, int(p.b_off + i % (p.b_n / 4u))));
#ifdef SILU_MUL
  y[(p.y_off >> 4) + i] = av / (1.0 + exp(-av)) * bv;
#else
  y[(p.y_off >> 4) + i] = av + bv;
#endif
}
