#version 450
// Flash decoding's merge: combines the p.nsplit partial softmaxes attention_flash.comp wrote
// for each (token t = y, head h = x) into the output. Partial z of (t, h) at ((t * H + h) *
// nsplit + z) * (D + 2) floats: acc[D] (unnormalized sum of exp(s - m) * v), m, l. With
// M = max over parts of m (and the sink's logit, p.flags bit 0): out[d] = sum_z acc_z[d] *
// exp(m_z - M) / (sum_z l_z * exp(m_z - M) + exp(sink - M)). Parts with no keys (m = -inf,
// l = 0) add nothing. Lanes over d. Reference: src/gpu/ref (attention).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 2) const uint D = 64;  // head dim

layout(std430, binding = 0) readonly buffer PT { float part[]; };
layout(std430, binding = 1) writeonly buffer O { float o[]; };
layout(std430, binding = 2) readonly buffer SK { float sinks[]; };
layout(push_constant) uniform P { push_attention_flash p; };

void main() {
  const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, n = p.nsplit;
  const uint base = (p.k_off >> 2) + (t * p.H + h) * n * (D + 2u);
  const bool sink = (p.flags & 1u) != 0u;
  const float sv = sink ? sinks[(p.sink_off >> 2) + h] : -1.0 / 0.0;
  float M = sv;
  for (uint z = 0u; z < n; ++z) M = max(M, part[base + z * (D + 2u) + D]);
  float L = sink ? exp(sv - M) : 0.0;
  for (uint z = 0u; z < n; ++z) {
    const float m = part[base + z * (D + 2u) + D];
    if (m > -1.0 / 0.0) L += part[base + z * (D + 2u) + D + 1u] * exp(m - M);
  }
  for (uint d = gl_LocalInvocationID.x; d < D; d += gl_WorkGroupSize.x) {
    float x = 0.0;
    for (uint z = 0u; z < n; ++z) {
      const float m = part[base + z * (D + 2u) + D];
      if (m > -1.0 / 0.0) x += part[base + z * (D + 2u) + d] * exp(m - M);
    }
    o[(p.o_off >> 2) + (t * p.H + h) * D + d] = x / L;
  }
}
