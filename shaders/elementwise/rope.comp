#version 450
// Rotary position embedding in place on x {D, H, T}: one thread per rotated pair (i < n_dims/2)
// of head (x / (n_dims/2)); workgroup y = token. theta = freq_scale * pos * base^(-2i/n_dims)
// / freq_factors[i], YaRN-mixed with the unscaled angle when ext_factor != 0, cos/sin times
// mscale. Normal mode rotates (2i, 2i+1), neox rotates (i, i + n_dims/2).
// Reference: src/gpu/ref (rope).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };
layout(std430, binding = 2) readonly buffer F { float ff[]; };
layout(push_constant) uniform P { push_rope p; };

void main() {
  const uint half_dims = p.n_dims / 2u, g = wg_x() * gl_WorkGroupSize.x + gl_LocalInvocationID.x, t = gl_WorkGroupID.y;  // x folds into z
  if (g >= half_dims * p.H) return;
  const uint h = g / half_dims, i = g % half_dims;
  float theta_ex = float(pos[(p.p_off >> 2) + t]) * pow(p.freq_base, -2.0 * float(i) / float(p.n_dims));
  if (p.has_ff != 0u) theta_ex /= ff[(p.f_off >> 2) + i];
  float theta = p.freq_scale * theta_ex;
  if (p.ext_factor != 0.0) {
    const float mix = (1.0 - clamp((float(i) - p.corr_low) / max(0.001, p.corr_high - p.corr_low), 0.0, 1.0)) * p.ext_factor;
    theta = theta * (1.0 - mix) + theta_ex * mix;
  }
  const float c = cos(theta) * p.mscale, s = sin(theta) * p.mscale;
  const uint base = (p.x_off >> 2) + (t * p.H + h) * p.D;
  const uint a = base + (p.mode == 0u ? 2u * i : i), b = base + (p.mode == 0u ? 2u * i + 1u : i + half_dims);
  const float x0 = x[a], x1 = x[b];
  x[a] = x0 * c - x1 * s;
  x[b] = x0 * s + x1 * c;
}
