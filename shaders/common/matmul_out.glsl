// The output stage of matmul.comp and matmul_texel.comp: push.glsl's output modes (split
// into up to three outputs with an optional bias; SwiGLU over stacked gate/up rows). Declare
// before including: `p` (push_matmul or push_matmul_texel) and the f32 buffers y, y2, y3 and
// bias (y2, y3, bias bound to a dummy when unused). Reference: gpu::backend::matmul_split and
// matmul_swiglu (their default compositions).

// The workgroup's row-tile index: gpu/vk folds a row grid wider than the device's
// maxComputeWorkGroupCount[0] into z (tile = x + z * groups in x); tiles past the real count
// find their rows past N (or F) and store nothing.
uint mm_tile() { return gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x; }

bool mm_swiglu() { return (p.flags & 2u) != 0u; }

// Rows an invocation (or lane group) with first logical row row0 may compute: N, or the F =
// n1 features of a SwiGLU dispatch.
uint mm_limit() { return mm_swiglu() ? p.n1 : p.N; }

// Weight row of logical row r (0 <= r < R) of an invocation computing R rows from row0:
// row0 + r; SwiGLU: features row0 .. row0 + R/2 - 1, their gate rows first, then their up
// rows (F further on). Clamped to real rows (results of clamped rows are dropped).
uint mm_row(uint row0, uint r, uint R) {
  if (!mm_swiglu()) return min(row0 + r, p.N - 1u);
  const uint F = p.n1, h = R / 2u;
  return r < h ? min(row0 + r, F - 1u) : F + min(row0 + r - h, F - 1u);
}

// Row n of the dispatch, token t. Accumulate (MM_ACCUMULATE builds, flags bit 3): y's
// element is added to; only the invocation storing it reads it (no other one owns it).
void mm_store(uint t, uint n, float v) {
  if ((p.flags & 1u) != 0u) v += bias[(p.b_off >> 2) + n];
  if (n < p.n1) {
    const uint i = (p.y_off >> 2) + t * p.y_stride + n;
#ifdef MM_ACCUMULATE
    if ((p.flags & 8u) != 0u) v += y[i];
#endif
    y[i] = v;
  } else if (n < p.n1 + p.n2) y2[(p.y2_off >> 2) + t * p.n2 + n - p.n1] = v;
  else y3[(p.y3_off >> 2) + t * (p.N - p.n1 - p.n2) + n - p.n1 - p.n2] = v;
}

// Feature f of a SwiGLU dispatch, token t: g = gate . x, u = up . x.
void mm_store_swiglu(uint t, uint f, float g, float u) { y[(p.y_off >> 2) + t * p.y_stride + f] = g / (1.0 + exp(-g)) * u; }
