#version 450
// Mixture-of-experts router (gpu::backend::moe_route): one invocation per token row of
// logits {E, T}. Picks the k largest logits one at a time, each the largest below the last
// pick in (value, -index) order (ties by lower id, NaN as -inf), so k*E iterations and no
// per-invocation lists (lavapipe's loop budget: 65535 iterations per invocation; E*k is at
// most 1024*16). Weights: softmax over all E (flags bit 1 clear) or over the k picks (set),
// then optionally normalised (bit 0: / max(sum, 2^-14)) and scaled. Reference: src/gpu/ref.
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer I { int ids[]; };
layout(std430, binding = 2) writeonly buffer W { float w[]; };
layout(push_constant) uniform P { push_moe_route p; };

const float NINF = -1.0 / 0.0;

float logit(uint base, uint e) {
  const float v = x[base + e];
  return isnan(v) ? NINF : v;
}

void main() {
  const uint t = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (t >= p.T) return;
  const uint base = (p.x_off >> 2) + t * p.E;
  float pick_v[16];
  uint pick_i[16];
  float last_v = 1.0 / 0.0;
  uint last_i = 0u;
  bool first = true;
  for (uint j = 0u; j < p.k; ++j) {
    float bv = NINF;
    uint bi = 0xffffffffu;
    for (uint e = 0u; e < p.E; ++e) {
      const float v = logit(base, e);
      const bool below = first || v < last_v || (v == last_v && e > last_i);  // after the last pick
      const bool better = bi == 0xffffffffu || v > bv;                         // lower id wins ties
      if (below && better) {
        bv = v;
        bi = e;
      }
    }
    pick_v[j] = bv;
    pick_i[j] = bi;
    last_v = bv;
    last_i = bi;
    first = false;
  }
  const float mx = pick_v[0] == NINF ? 0.0 : pick_v[0];
  float all = 0.0;
  if ((p.flags & 2u) != 0u) {
    for (uint j = 0u; j < p.k; ++j) all += exp(pick_v[j] - mx);
  } else {
    for (uint e = 0u; e < p.E; ++e) all += exp(logit(base, e) - mx);
  }
  float sum = 0.0;
  for (uint j = 0u; j < p.k; ++j) {
    pick_v[j] = exp(pick_v[j] - mx) / all;
    sum += pick_v[j];
  }
  float f = (p.flags & 1u) != 0u ? 1.0 / max(sum, 6.103515625e-5) : 1.0;
  if (p.scale != 0.0 && p.scale != 1.0) f *= p.scale;
  for (uint j = 0u; j < p.k; ++j) {
    ids[(p.i_off >> 2) + t * p.k + j] = int(pick_i[j]);
    w[(p.w_off >> 2) + t * p.k + j] = pick_v[j] * f;
  }
}
