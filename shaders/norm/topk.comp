#version 450
// top_k: the k largest (value, index) pairs of each row, sorted by value descending, ties by
// lower index, NaN read as -inf; lists shorter than k are padded with (-inf, p.pad).
// mode 0: each invocation scans `chunk` elements of a row of x and writes its list; mode 1:
// each invocation merges `chunk` sorted lists of k pairs (values x, indices xi) into one.
// Lists are kept by insertion into a private sorted array (k <= 256): after the first k
// elements only those beating the current last are inserted, and a merged list stops at its
// first element that does not. Reference: src/gpu/ref (top_k).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer VO { float vo[]; };
layout(std430, binding = 2) writeonly buffer IO { int io[]; };
layout(std430, binding = 3) readonly buffer XI { int xi[]; };
layout(push_constant) uniform P { push_topk p; };

float tv[256];
int ti[256];
uint n = 0u;

bool before(float a, int ai, float b, int bi) { return a > b || (a == b && ai < bi); }

// Inserts (v, id); false when the list is full and (v, id) does not beat its last entry.
bool insert(float v, int id) {
  uint pos;
  if (n < p.k) {
    pos = n;
    n++;
  } else {
    if (!before(v, id, tv[p.k - 1u], ti[p.k - 1u])) return false;
    pos = p.k - 1u;
  }
  while (pos > 0u && before(v, id, tv[pos - 1u], ti[pos - 1u])) {
    tv[pos] = tv[pos - 1u];
    ti[pos] = ti[pos - 1u];
    pos--;
  }
  tv[pos] = v;
  ti[pos] = id;
  return true;
}

void main() {
  const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (g >= p.n_rows * p.n_out) return;
  const uint r = g / p.n_out, c = g % p.n_out;
  const uint lo = c * p.chunk, hi = min(p.n_in, lo + p.chunk);
  const float ninf = uintBitsToFloat(0xff800000u);
  if (p.mode == 0u) {
    const uint xb = (p.x_off >> 2) + r * p.n_in;
    for (uint i = lo; i < hi; ++i) {
      float v = x[xb + i];
      if (isnan(v)) v = ninf;
      insert(v, int(i));
    }
  } else {
    for (uint l = lo; l < hi; ++l) {
      const uint base = (r * p.n_in + l) * p.k;
      for (uint j = 0u; j < p.k; ++j)
        if (!insert(x[(p.x_off >> 2) + base + j], xi[(p.xi_off >> 2) + base + j])) break;
    }
  }
  const uint ob = (r * p.n_out + c) * p.k;
  for (uint j = 0u; j < p.k; ++j) {
    vo[(p.v_off >> 2) + ob + j] = j < n ? tv[j] : ninf;
    io[(p.i_off >> 2) + ob + j] = j < n ? ti[j] : int(p.pad);
  }
}
