#version 450
// q8_1 activations for matvec_q8_1.comp (#20): each K-element f32 row t of x becomes K / 32
// blocks as ggml's block_q8_1 (36 bytes, 9 words: f16 d | f16 s << 16, then 32 int8 qs):
// d = max|x| / 127, qs = round(x / d) (halves away from zero), s = d * sum(qs). With flags
// bit 0 the row quantized is rms_norm(x) * g, so the matvec's norm prologue moves here and no
// normed copy of x is written. One workgroup (power-of-two size) per row, one invocation per
// block. Reference: gpu/ref/ref_q8_1.cpp (quantize_row_q8_1).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Q { uint q[]; };
layout(std430, binding = 2) readonly buffer G { float g[]; };
layout(push_constant) uniform P { push_quantize_q8_1 p; };

shared float red[256];

// 1/sqrt(mean(x^2) + eps) of row xr (words), reduced over the workgroup.
float norm_scale(uint xr, uint lid) {
  float ss = 0.0;
  for (uint e = lid; e < p.K; e += gl_WorkGroupSize.x) ss += x[xr + e] * x[xr + e];
  red[lid] = ss;
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    barrier();
    if (lid < s) red[lid] += red[lid + s];
  }
  barrier();
  return inversesqrt(red[0] / float(p.K) + p.eps);
}

void main() {
  const uint t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
  const uint xr = (p.x_off >> 2) + t * p.K, nb = p.K / 32u;
  const bool nrm = (p.flags & 1u) != 0u;
  const float ns = nrm ? norm_scale(xr, lid) : 1.0;
  for (uint b = lid; b < nb; b += gl_WorkGroupSize.x) {
    float v[32];
    float amax = 0.0;
    for (uint l = 0u; l < 32u; ++l) {
      const uint e = 32u * b + l;
      v[l] = nrm ? x[xr + e] * ns * g[(p.g_off >> 2) + e] : x[xr + e];
      amax = max(amax, abs(v[l]));
    }
    const float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
    const uint o = (p.q_off >> 2) + (t * nb + b) * 9u;
    int sum = 0;
    for (uint j = 0u; j < 8u; ++j) {
      uint w = 0u;
      for (uint i = 0u; i < 4u; ++i) {
        const float f = v[4u * j + i] * id;
        const int qi = int(sign(f) * floor(abs(f) + 0.5));
        sum += qi;
        w |= (uint(qi) & 0xffu) << (8u * i);
      }
      q[o + 1u + j] = w;
    }
    q[o] = packHalf2x16(vec2(d, d * float(sum)));
  }
}
