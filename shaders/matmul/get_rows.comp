#version 450
// out[m, :] = dequant(table[idx[m], :]) for table rows bound in this dispatch
// ([r0, r0 + nr); big tables are split across dispatches). One thread per element;
// workgroup y = m. PLANAR (q8_0 in vk_backend's planar layout, bound whole): row r's quants
// are the C bytes at t_off + r * C; block b's scale is the f32 at t_off + row_bytes +
// (b * nr + r) * 4 (row_bytes carries the scales plane's offset, nr its padded row count). Reference: src/gpu/ref (get_rows).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer W { uint wq[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer O { float o[]; };
layout(push_constant) uniform P { push_get_rows p; };

#include "../common/dequant.glsl"

void main() {
  const uint e = wg_x() * gl_WorkGroupSize.x + gl_LocalInvocationID.x, m = gl_WorkGroupID.y;  // x folds into z
  if (e >= p.C) return;
  const int r = idx[(p.i_off >> 2) + m] - p.r0;
#ifdef PLANAR
  if (r < 0 || uint(r) * p.C >= p.row_bytes) return;  // rows: row_bytes / C
#else
  if (r < 0 || r >= p.nr) return;
#endif
#ifdef PLANAR
  const float d = uintBitsToFloat(wq[(p.t_off + p.row_bytes + ((e / 32u) * uint(p.nr) + uint(r)) * 4u) >> 2]);
  o[(p.o_off >> 2) + m * p.C + e] = d * float(sx8(p.t_off + uint(r) * p.C + e));
#else
  o[(p.o_off >> 2) + m * p.C + e] = deq1(p.t_off + uint(r) * p.row_bytes, e);
#endif
}
