#version 450
// Tiled GEMM for prefill and batches on GPUs (#20): y[t, n] = sum_k w[n, k] * x[t, k], w {K, N}
// in any weight dtype (common/dequant.glsl), x {K, T} f32, y f32, with matmul.comp's output
// modes (split + bias, SwiGLU, accumulate: common/matmul_out.glsl) and its norm prologue (x
// read as rms_norm(x) * g). Same bindings and push constants as matmul.comp, so gpu/vk binds
// both alike.
// A workgroup of 256 invocations computes a BM x BN = 64 rows x 64 tokens tile. Per K step of
// BK = 32 it dequantizes the tile's 64 weight chunks once into shared memory (64 invocations,
// one 32-element chunk each) and stages the 64 tokens' x (times g under the norm) beside them;
// each invocation then accumulates a 4 rows x 4 tokens register tile from two vec4 shared
// loads per k (16 FMAs). Weights are read from memory ceil(T / 64) times instead of
// matmul.comp's ceil(T / 8), and x ceil(N / 64) times. Shared memory: 2 x 8 KiB (the Vulkan
// minimum is 16 KiB). The inner product is the hook a cooperative-matrix build replaces
// (VK_KHR_cooperative_matrix: not in Debian 12's glslang 11, so not built here).
// Needs K % 32 == 0 for block types (always: their blocks are 32 or 256 wide); scalar types
// take any K (a zero-filled tail). Reference: src/gpu/ref (matmul, matmul_split, matmul_swiglu;
// MUL_MAT_ID: matmul_id, matmul_id_swiglu).
// MUL_MAT_ID (the gemm_id_* kernels; gpu::backend::matmul_id and matmul_id_swiglu for more
// than 8 tokens on GPU tunings): the tokens of a workgroup are the up to 64 (token, slot) rows
// of one expert that moe/moe_gather.comp's route table lists as tile gl_WorkGroupID.y (grid y:
// the table's tile capacity; workgroups past its n_tiles, or whose expert is outside the bound
// window [e0, e0 + e_n), return at once). Weights come from that expert's matrix, x from row
// r / x_div and results go to y row r, so each selected expert's weight tiles are read once
// per 64 rows routed to it (not once per row). No norm prologue (binding 6 is the table). The
// output stage has matmul.comp MUL_MAT_ID's per-expert epilogue (gpt-oss: the expert's bias
// column, the clamped SwiGLU), the tile's expert standing for every row's.
// BN32 (with MUL_MAT_ID: gemm_id_*_bn32): tiles of 32 rows in workgroups of 128, for
// batches whose experts get few rows each (a 64-row tile of an expert with 32 rows computes
// half its FMAs for nothing); weight tiles are then read once per 32 rows.
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"
#define MM_ACCUMULATE  // matmul_out.glsl: y += result (y is read-write here)

#define BM 64u
#define BK 32u
#ifdef BN32  // a 64 x 32 tile in 128 invocations (the gemm_id_*_bn32 kernels: experts with few rows)
#define BN 32u
layout(local_size_x = 128) in;
#else
#define BN 64u
layout(local_size_x = 256) in;
#endif

layout(std430, binding = 0) readonly buffer W { uint wq[]; };
layout(std430, binding = 0) readonly buffer W4 { uvec4 wq4[]; };  // same buffer, 16-byte loads
#define HAVE_WQ4
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) writeonly buffer Y2 { float y2[]; };
layout(std430, binding = 4) writeonly buffer Y3 { float y3[]; };
layout(std430, binding = 5) readonly buffer Bias { float bias[]; };
#ifdef MUL_MAT_ID
layout(std430, binding = 6) readonly buffer Route { uint route[]; };
layout(push_constant) uniform P { push_gemm_id p; };
float gnorm(uint e) { return 1.0; }
// The workgroup's expert (set by tile_setup): matmul_out.glsl's per-expert bias column and
// clamped SwiGLU (flags bits 0 and 4, gpt-oss) take it for every row of the tile.
uint tile_e;
uint mm_expert(uint t) { return tile_e; }
#else
layout(std430, binding = 6) readonly buffer G { float g[]; };  // norm weight (flags bit 2)
layout(push_constant) uniform P { push_matmul p; };
float gnorm(uint e) { return g[(p.g_off >> 2) + e]; }
#endif

#include "../common/dequant.glsl"
#include "../common/matmul_out.glsl"

// ws[k][s]: weight slot s (below) at column k of the step; xs[k][t]: token t. As vec4 over
// four slots / four tokens so the inner loop reads one vec4 of each.
shared vec4 ws[BK * BM / 4u];
shared vec4 xs[BK * BN / 4u];

// The weight row of tile slot s. Plain and split: row tile * 64 + s. SwiGLU: the tile covers
// 32 features; slots 4j .. 4j + 3 hold gate(2j), gate(2j + 1), up(2j), up(2j + 1), so the
// invocation holding slots 4j .. 4j + 3 owns both halves of its two features. Clamped to real
// rows (their results are dropped).
uint slot_row(uint s) {
  if (!mm_swiglu()) return min(mm_tile() * BM + s, p.N - 1u);
  const uint f = min(mm_tile() * (BM / 2u) + 2u * (s >> 2) + (s & 1u), p.n1 - 1u);
  return (s & 2u) == 0u ? f : p.n1 + f;
}

bool norm_on() { return (p.flags & 4u) != 0u; }

// The workgroup's token tile: rows (<= 64) tokens; token slot j of the tile reads x row
// x_row(j) and stores to y row out_row(j); w_base: the byte offset of its weight matrix.
uint tile_rows, tile_first, w_base;
#ifdef MUL_MAT_ID
uint out_row(uint j) { return route[(p.route_off >> 2) + p.rows_at + tile_first + j]; }
uint x_row(uint j) { return out_row(min(j, tile_rows - 1u)) / p.x_div; }
// Reads tile gl_WorkGroupID.y of the route table; false: no tile here (past n_tiles or
// another window's expert).
bool tile_setup() {
  const uint o = p.route_off >> 2, i = gl_WorkGroupID.y;
  if (i >= route[o]) return false;
  const uint te = route[o + 1u + 2u * i], e = te & 0xffffu;
  if (e - p.e0 >= p.e_n) return false;
  tile_e = e;
  tile_rows = te >> 16;
  tile_first = route[o + 2u + 2u * i];
  w_base = p.w_off + (e - p.e0) * p.e_bytes;
  return true;
}
#else
uint out_row(uint j) { return tile_first + j; }
uint x_row(uint j) { return tile_first + min(j, tile_rows - 1u); }
bool tile_setup() {
  tile_first = gl_WorkGroupID.y * BN;
  tile_rows = min(BN, p.T - tile_first);
  w_base = p.w_off;
  return true;
}
#endif

// Weights of slot s, columns [k0, k0 + 32) -> ws (zero past K: scalar types only).
void stage_weights(uint s, uint k0) {
  const uint rowoff = w_base + slot_row(s) * p.w_row_bytes;
  vec4 v[8];
#if CHUNK == 32
  deq_chunk(rowoff, k0 / 32u, v);
#else
  for (uint j = 0u; j < 8u; ++j) {
    const uint e = k0 + 4u * j;
    if (e + 4u <= p.K) v[j] = deq4(rowoff, e);
    else
      for (uint i = 0u; i < 4u; ++i) v[j][i] = e + i < p.K ? deq1(rowoff, e + i) : 0.0;
  }
#endif
  for (uint j = 0u; j < 8u; ++j)
    for (uint i = 0u; i < 4u; ++i) ws[(4u * j + i) * (BM / 4u) + (s >> 2)][s & 3u] = v[j][i];
}

// x of token slot t (row xrow, words), columns [k0 + 4q, k0 + 4q + 4) -> xs, times g under the
// norm; zero past K.
void stage_x(uint t, uint xrow, uint k0, uint q, bool x_vec4) {
  const uint e = k0 + 4u * q, b = xrow + e;
  vec4 v;
  if (x_vec4 && e + 4u <= p.K) v = x4[b >> 2];
  else
    for (uint i = 0u; i < 4u; ++i) v[i] = e + i < p.K ? x[b + i] : 0.0;
  if (norm_on())
    for (uint i = 0u; i < 4u; ++i) v[i] *= e + i < p.K ? gnorm(e + i) : 0.0;
  for (uint i = 0u; i < 4u; ++i) xs[(4u * q + i) * (BN / 4u) + (t >> 2)][t & 3u] = v[i];
}

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint tr = lid % 16u, tc = lid / 16u;  // this invocation's slots 4tr.. and tokens 4tc..
  if (!tile_setup()) return;  // uniform over the workgroup, before any barrier
  const bool x_vec4 = (p.x_off & 15u) == 0u && (p.K & 3u) == 0u;

  // Norm prologue: 1/sqrt(mean(x[t]^2) + eps) of the invocation's 4 tokens, four invocations
  // per token of the tile summing a quarter of K each (through ws, before the main loop).
  float ns[4] = float[4](1.0, 1.0, 1.0, 1.0);
  if (norm_on()) {
    const uint xr = (p.x_off >> 2) + x_row(lid / 4u) * p.K;
    float ss = 0.0;
    for (uint e = lid % 4u; e < p.K; e += 4u) ss += x[xr + e] * x[xr + e];
    ws[lid / 4u][lid % 4u] = ss;
    barrier();
    for (uint j = 0u; j < 4u; ++j) {
      const vec4 s4 = ws[4u * tc + j];
      ns[j] = inversesqrt((s4.x + s4.y + s4.z + s4.w) / float(p.K) + p.eps);
    }
    barrier();
  }

  vec4 acc[4];  // acc[j][i]: slot 4tr + i, token 4tc + j
  for (uint j = 0u; j < 4u; ++j) acc[j] = vec4(0.0);
  // x staging: invocation lid loads column quad lid % 8 of tokens lid / 8 and lid / 8 + BN / 2
  // (4 * BN invocations), so eight neighbours read one token's 128 contiguous bytes.
  const uint xq = lid % 8u, xt = lid / 8u;
  const uint xrow0 = (p.x_off >> 2) + x_row(xt) * p.K;
  const uint xrow1 = (p.x_off >> 2) + x_row(xt + BN / 2u) * p.K;
  for (uint k0 = 0u; k0 < p.K; k0 += BK) {
    if (lid < BM) stage_weights(lid, k0);
    stage_x(xt, xrow0, k0, xq, x_vec4);
    stage_x(xt + BN / 2u, xrow1, k0, xq, x_vec4);
    barrier();
    for (uint k = 0u; k < BK; ++k) {
      const vec4 a = ws[k * (BM / 4u) + tr], b = xs[k * (BN / 4u) + tc];
      acc[0] += a * b.x;
      acc[1] += a * b.y;
      acc[2] += a * b.z;
      acc[3] += a * b.w;
    }
    barrier();
  }

  for (uint j = 0u; j < 4u; ++j) {
    if (4u * tc + j >= tile_rows) break;
    const uint t = out_row(4u * tc + j);
    const vec4 r = acc[j] * ns[j];
    if (mm_swiglu()) {
      const uint f = mm_tile() * (BM / 2u) + 2u * tr;
      if (f < p.n1) mm_store_swiglu(t, f, r.x, r.z);
      if (f + 1u < p.n1) mm_store_swiglu(t, f + 1u, r.y, r.w);
    } else {
      for (uint i = 0u; i < 4u; ++i) {
        const uint n = mm_tile() * BM + 4u * tr + i;
        if (n < p.N) mm_store(t, n, r[i]);
      }
    }
  }
}
