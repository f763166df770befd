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

// Where row t's bias starts in `bias` (elements). MUL_MAT_ID: bias {N, E} holds one column
// per expert (N = the dispatch's rows per expert), row t takes its expert's, mm_expert(t)
// (gpt-oss's per-expert biases, gpu::backend::matmul_id_bias / matmul_id_swiglu_oai).
#ifdef MUL_MAT_ID
uint mm_bias0(uint t) { return (p.b_off >> 2) + mm_expert(t) * p.N; }
#else
uint mm_bias0(uint t) { return p.b_off >> 2; }
#endif

// Row n of the dispatch, token t. Accumulate (MM_ACCUMULATE builds, flags bit 3): y's
// element is added to; only the invocation storing it reads it (no other one owns it).
void mm_store(uint t, uint n, float v) {
  if ((p.flags & 1u) != 0u) v += bias[mm_bias0(t) + n];
  if (n < p.n1) {
    const uint i = (p.y_off >> 2) + t * p.y_stride + n;
#ifdef MM_ACCUMULATE
    if ((p.flags & 8u) != 0u) v += y[i];
#endif
    y[i] = v;
  } else if (n < p.n1 + p.n2) y2[(p.y2_off >> 2) + t * p.n2 + n - p.n1] = v;
  else y3[(p.y3_off >> 2) + t * (p.N - p.n1 - p.n2) + n - p.n1 - p.n2] = v;
}

// Feature f of a SwiGLU dispatch, token t: g = gate . x, u = up . x, plus the gate and up
// rows' biases (flags bit 0: bias rows [gate; up] as w's). MUL_MAT_ID with flags bit 4:
// gpt-oss's clamped SwiGLU (gpu::backend::swiglu_oai, push alpha and limit) instead of silu.
void mm_store_swiglu(uint t, uint f, float g, float u) {
  if ((p.flags & 1u) != 0u) {
    g += bias[mm_bias0(t) + f];
    u += bias[mm_bias0(t) + p.n1 + f];
  }
  float v = g / (1.0 + exp(-g)) * u;
#ifdef MUL_MAT_ID
  if ((p.flags & 16u) != 0u) {
    g = min(g, p.limit);
    v = g / (1.0 + exp(-p.alpha * g)) * (clamp(u, -p.limit, p.limit) + 1.0);
  }
#endif
  y[(p.y_off >> 2) + t * p.y_stride + f] = v;
}
