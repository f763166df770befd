#version 450
// y[i] = a[i] + b[i % b_n] (b_n == n, or one broadcast row) ; with SILU_MUL defined:
// y[i] = silu(a[i]) * b[i]; with SIGMOID_MUL: y[i] = b[i] * sigmoid(a[i / b_n]) (b_n 1, or a row length: one gate per row); with GELU_MUL: y[i] = gelu_tanh(a[i]) * b[i]. Elementwise over n f32 elements; 2-D grid for large n.
// Reference: src/gpu/ref (add, silu_mul).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform P { push_elementwise p; };

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
#ifdef SIGMOID_MUL  // a (the gate) has one element per b_n elements of b: b_n is 1, or a row length
  const float av = a[(p.a_off >> 2) + i / p.b_n], bv = b[(p.b_off >> 2) + i];
#else
  const float av = a[(p.a_off >> 2) + i], bv = b[(p.b_off >> 2) + i % p.b_n];
#endif
#ifdef SILU_MUL
  y[(p.y_off >> 2) + i] = av / (1.0 + exp(-av)) * bv;
#elif defined(SIGMOID_MUL)  // y = b * sigmoid(a) (qwen35's attention output gate)
  y[(p.y_off >> 2) + i] = bv / (1.0 + exp(-av));
#elif defined(GELU_MUL)  // tanh approximation (ggml_gelu); 2 sigmoid(2u) == 1 + tanh(u)
  const float u = 0.7978845608028654 * av * (1.0 + 0.044715 * av * av);
  y[(p.y_off >> 2) + i] = av / (1.0 + exp(-2.0 * u)) * bv;
#else
  y[(p.y_off >> 2) + i] = av + bv;
#endif
}
