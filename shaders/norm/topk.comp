#version 450
// top_k: the k largest (value, index) pairs of each row of x, sorted by value descending,
// ties by lower index, NaN read as -inf; rows shorter than k are padded with (-inf, p.pad).
// One workgroup per row keeps the best 256 in the lower half of a 512-entry shared list.
// Rounds of 256 elements: those that beat the current k-th entry are appended to the upper
// half, and when any were, the workgroup bitonic-sorts all 512 (45 barrier stages). Loops
// stay under lavapipe's 65535 iterations per invocation (its loop limiter silently ends a
// shader's loops past that count, all loops together): the sort is written out, the round
// loop's body has 2-iteration loops, so a row costs about 3 V/256 <= 3072 iterations for
// V <= 262144 (the runner's bound). Reference: src/gpu/ref (top_k).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

#define WG 128
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer VO { float vo[]; };
layout(std430, binding = 2) writeonly buffer IO { int io[]; };
layout(push_constant) uniform P { push_topk p; };

shared float sv[512];
shared int si[512];
shared uint cnt;

bool before(float a, int ai, float b, int bi) { return a > b || (a == b && ai < bi); }

void exchange(uint t, uint size, uint stride) {
  const uint i = 2u * stride * (t / stride) + (t % stride), j = i + stride;
  const bool desc = (i & size) == 0u;
  const bool sw = desc ? before(sv[j], si[j], sv[i], si[i]) : before(sv[i], si[i], sv[j], si[j]);
  if (sw) {
    const float tv = sv[i];
    const int tid = si[i];
    sv[i] = sv[j];
    si[i] = si[j];
    sv[j] = tv;
    si[j] = tid;
  }
}

// One stage of the network: 256 compare-exchanges, two per invocation.
void stage(uint size, uint stride, uint lid) {
  barrier();
  exchange(lid, size, stride);
  exchange(lid + WG, size, stride);
}

// Sorts sv/si[0, 512) descending by `before`; every invocation calls it (barriers). Written
// out stage by stage: no loop iterations for lavapipe's limiter to count.
void sort512(uint lid) {
  stage(2u, 1u, lid); stage(4u, 2u, lid); stage(4u, 1u, lid); stage(8u, 4u, lid); stage(8u, 2u, lid);
  stage(8u, 1u, lid); stage(16u, 8u, lid); stage(16u, 4u, lid); stage(16u, 2u, lid); stage(16u, 1u, lid);
  stage(32u, 16u, lid); stage(32u, 8u, lid); stage(32u, 4u, lid); stage(32u, 2u, lid); stage(32u, 1u, lid);
  stage(64u, 32u, lid); stage(64u, 16u, lid); stage(64u, 8u, lid); stage(64u, 4u, lid); stage(64u, 2u, lid);
  stage(64u, 1u, lid); stage(128u, 64u, lid); stage(128u, 32u, lid); stage(128u, 16u, lid); stage(128u, 8u, lid);
  stage(128u, 4u, lid); stage(128u, 2u, lid); stage(128u, 1u, lid); stage(256u, 128u, lid); stage(256u, 64u, lid);
  stage(256u, 32u, lid); stage(256u, 16u, lid); stage(256u, 8u, lid); stage(256u, 4u, lid); stage(256u, 2u, lid);
  stage(256u, 1u, lid); stage(512u, 256u, lid); stage(512u, 128u, lid); stage(512u, 64u, lid); stage(512u, 32u, lid);
  stage(512u, 16u, lid); stage(512u, 8u, lid); stage(512u, 4u, lid); stage(512u, 2u, lid); stage(512u, 1u, lid);
  barrier();
}

void main() {
  const uint lid = gl_LocalInvocationID.x, r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (r >= p.n_rows) return;  // uniform per workgroup
  const float ninf = uintBitsToFloat(0xff800000u);
  const int pad = int(p.pad);
  for (uint q = 0u; q < 4u; ++q) {  // (unrolled by the compiler; 4 iterations once)
    sv[lid + q * WG] = ninf;
    si[lid + q * WG] = pad;
  }
  if (lid == 0u) cnt = 0u;
  barrier();
  const uint xb = (p.x_off >> 2) + r * p.n_in;
  for (uint base = 0u; base < p.n_in; base += 256u) {
    const float tv = sv[p.k - 1u];
    const int tid = si[p.k - 1u];
    for (uint h = 0u; h < 2u; ++h) {
      const uint i = base + lid + h * WG;
      if (i < p.n_in) {
        float v = x[xb + i];
        if (isnan(v)) v = ninf;
        if (before(v, int(i), tv, tid)) {
          const uint at = atomicAdd(cnt, 1u);
          sv[256u + at] = v;
          si[256u + at] = int(i);
        }
      }
    }
    barrier();
    const uint c = cnt;
    if (c > 0u) {  // uniform: read by all after the barrier, reset only after the sort's barriers
      sort512(lid);
      sv[256u + lid] = ninf;
      si[256u + lid] = pad;
      sv[256u + WG + lid] = ninf;
      si[256u + WG + lid] = pad;
      if (lid == 0u) cnt = 0u;
      barrier();
    }
  }
  for (uint j = lid; j < p.k; j += WG) {
    vo[(p.v_off >> 2) + r * p.k + j] = sv[j];
    io[(p.i_off >> 2) + r * p.k + j] = si[j];
  }
}
