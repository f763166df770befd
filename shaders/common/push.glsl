// Push-constant layouts shared by kernels. Each struct is mirrored in C++
// (src/gpu/vk/push.hpp) with a static_assert on its size; change both together.
// All *_off fields are BYTE offsets relative to the start of the bound buffer window.

// A workgroup's x index where gpu/vk may fold the grid into z (vk_backend::run's fold_x: a
// grid wider than maxComputeWorkGroupCount[0] runs as groups_x * z); the kernel ignores
// indices past its rows.
uint wg_x() { return gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x; }

struct push_elementwise {  // add, silu_mul: y[i] = f(a[i], b[i % b_n])
  uint a_off, b_off, y_off;
  uint n;    // elements of y
  uint b_n;  // elements of b (== n, or ne0 for a broadcast row)
};

// Output modes of both matmul kernels (common/matmul_out.glsl). Split (flags 0): rows
// [0, n1) of this dispatch go to y (row stride y_stride), [n1, n1 + n2) to y2 and [n1 + n2,
// N) to y3 (each packed: row stride n2, N - n1 - n2); a plain matmul has n1 = N. bias
// (flags bit 0): + bias[row] (f32, b_off bytes). SwiGLU (flags bit 1): w's N rows are [gate;
// up], n1 = N / 2 = F features, and y[t, f] = silu(gate . x) * (up . x), row stride y_stride.
// matmul.comp only: norm (flags bit 2; LANES_REDUCE builds): x is read as rms_norm(x) * g
// (g: K f32 at g_off bytes, binding 6; eps), the norm computed by each workgroup;
// accumulate (flags bit 3): y's rows are added to, y[t, n] += result (the residual add).
struct push_matmul {  // y[t, n] = sum_k w[n, k] * x[t, k]
  uint w_off, x_off, y_off;
  uint K, N, T;       // N: rows of w handled by this dispatch
  uint w_row_bytes;   // bytes per row of w
  uint y_stride;      // elements per row of y (>= N when N is split into chunks)
  uint n1, n2, y2_off, y3_off, b_off;  // output modes (above)
  uint flags;                          // bit 0: bias, bit 1: swiglu, bit 2: norm, bit 3: accumulate
  uint g_off;                          // norm: bytes of g in binding 6
  float eps;                           // norm: rms_norm's epsilon
};

struct push_matmul_id {  // matmul.comp with MUL_MAT_ID: push_matmul's fields, then the expert table
  uint w_off, x_off, y_off;
  uint K, N, T;       // N: rows per expert (this dispatch's), T: (token, slot) rows
  uint w_row_bytes;
  uint y_stride;
  uint n1, n2, y2_off, y3_off, b_off;
  uint flags;
  uint g_off;         // unused (no norm prologue in expert matmuls): push_matmul's layout
  float eps;
  uint ids_off;       // bytes: i32 expert id per row (binding 6)
  uint x_div;         // x row of row r: r / x_div (k: shared by a token's slots; 1: own row)
  uint e_bytes;       // bytes per expert matrix
  uint n_exp;         // E (ids are clamped below it)
  uint e0, e_n;       // experts [e0, e0 + e_n) are bound (w_off: e0's matrix); rows of others are skipped
  // flags bit 4 (SwiGLU mode): gpt-oss's clamped SwiGLU with these constants. With flags bit 0
  // the bias {N, E} (b_off) holds each expert's column: row r adds column ids[r].
  float alpha, limit;
};

struct push_moe_route {  // moe_route.comp: one invocation per token row
  uint x_off, i_off, w_off;  // bytes: logits {E, T}, ids {k, T}, weights {k, T}
  uint E, k, T;
  uint flags;         // bit 0: normalise, bit 1: softmax over the selected only
  float scale;        // 0 or 1: none
};

struct push_moe_combine {  // moe_combine.comp: y[t, c] = sum_s w[t, s] * x[t*k + s, c]
  uint x_off, w_off, y_off;
  uint C, k, n;       // n = C * T
};

struct push_add_id {  // moe/add_id.comp: add_id (y = x + b[ids[r]]) and swiglu_oai (SWIGLU_OAI)
  uint x_off, b_off, i_off, y_off;  // bytes (b, ids: add_id only)
  uint N, E, n;       // N: elements per row of y, E: bias columns, n = N * R
  float alpha, limit; // swiglu_oai
};

struct push_moe_gather {  // moe/moe_gather.comp: the route table of gemm.comp MUL_MAT_ID
  uint ids_off, out_off;  // bytes: ids {k, T} i32 (binding 0), the table (binding 1)
  uint R, E;              // (token, slot) rows, experts
  uint rows_at;           // words from out_off where the rows list starts (1 + 2 * tile capacity)
  uint tile;              // rows per tile: gemm.comp's BN (64, or 32 for BN32)
};

struct push_gemm_id {  // gemm.comp with MUL_MAT_ID: push_matmul's fields, then the route table
  uint w_off, x_off, y_off;
  uint K, N, T;       // N: rows per expert; T: (token, slot) rows of this dispatch
  uint w_row_bytes;
  uint y_stride;
  uint n1, n2, y2_off, y3_off, b_off;
  uint flags;
  uint g_off;         // unused (no norm prologue): push_matmul's layout
  float eps;
  uint route_off;     // bytes: moe_gather.comp's table (binding 6)
  uint rows_at;       // words from route_off to its rows list
  uint x_div;         // x row of row r: r / x_div (k: shared by a token's slots; 1: own row)
  uint e_bytes;       // bytes per expert matrix
  uint e0, e_n;       // experts [e0, e0 + e_n) are bound (w_off: e0's matrix); tiles of others are skipped
  float alpha, limit; // flags bit 4 and bias {N, E} as push_matmul_id's (gpt-oss's epilogue)
};

struct push_matmul_texel {  // matmul_texel.comp: bases are ELEMENT indices into the texel views
  uint w_base;        // 16-byte texel where w's row 0 starts (binding 8)
  uint s_base;        // 16-byte texel where the q8_0 scales plane starts (binding 8; unused otherwise)
  uint x_base;        // vec4 texel where x's row 0 starts (binding 9)
  uint y_off;         // bytes (binding 2)
  uint K, N, T;
  uint y_stride;      // elements per row of y
  uint n1, n2, y2_off, y3_off, b_off;  // output modes (above)
  uint flags;                          // bit 0: bias, bit 1: swiglu
};

struct push_get_rows {  // out[m, :] = table[idx[m], :]
  uint t_off, i_off, o_off;
  uint C, M;
  uint row_bytes;
  int r0, nr;           // table rows [r0, r0 + nr) are bound in this dispatch
};

struct push_rows {  // rms_norm, softmax, argmax: one workgroup per row of C elements
  uint x_off, w_off, y_off;
  uint C;
  float eps;
  uint n_rows;        // rows (groups past them, of a grid folded into z, return)
};

struct push_add_norm {  // add_rms_norm_texel: x += b; y = rms_norm(x) * w, one invocation per row
  uint x_t, b_t, w_t;   // texel indices (x and b: vec4 views, w: 16-byte texels)
  uint x_off, y_off;    // bytes, storage bindings 0 (x) and 1 (y)
  uint C;
  float eps;
  uint n_rows;
};

struct push_rope {  // in place on x {D, H, T}
  uint x_off, p_off, f_off;
  uint D, H, T;
  uint n_dims, mode;  // mode 0 normal (adjacent pairs), 1 neox (halves)
  float freq_base, freq_scale;
  uint has_ff;
  float ext_factor, corr_low, corr_high, mscale;  // YaRN (gpu::rope_params)
};

struct push_kv_store {  // cache[slot[t] - s_lo, e] = src[t, e]
  uint k_off, v_off, kc_off, vc_off, s_off;
  uint W, T;          // W = Hkv*D elements per token
  uint s_lo, s_n;     // the bound cache window holds slots [s_lo, s_lo + s_n); others are skipped
};

struct push_attention {
  uint q_off, k_off, v_off, bt_off, seq_off, pos_off, o_off;
  uint H, Hkv, D, B, maxb, T;
  float scale;
  uint window;    // > 0: keys with pos[t] - j < window only (sliding window)
  float softcap;  // > 0: score = softcap * tanh(score / softcap)
  uint sink_off;  // has_sink: bytes of the per-head sink logits {H} f32 (binding 7; texel kernel: 4)
  uint has_sink;  // 1: each head's sink joins its softmax denominator (gpt-oss): l += exp(sink - m)
};

// attention_flash.comp / attention_merge.comp: push_attention's fields, then the split count
// (parts of each token's key range; 1: output written directly), the sinks' byte offset and
// flags (bit 0: sinks bound at binding 7 (flash) / 2 (merge), one f32 logit per query head).
// The merge reads its partials at k_off (bytes, binding 0) and writes out at o_off (binding 1).
struct push_attention_flash {
  uint q_off, k_off, v_off, bt_off, seq_off, pos_off, o_off;
  uint H, Hkv, D, B, maxb, T;
  float scale;
  uint window;
  float softcap;
  uint nsplit, sink_off, flags;
  uint blk_lo, blk_n; // the bound K/V windows hold cache blocks [blk_lo, blk_lo + blk_n) (a KV pool
                      // split over several windows, gpu/vk/kv_partition.hpp); keys elsewhere are skipped
  uint z0, ztot;      // partials: this dispatch's parts are z0 + z of ztot per (token, head);
                      // ztot == 1: the output is written normalized
  uint pad;
};
struct push_scale {  // y = x * s, then softcap * tanh(y / softcap) when softcap > 0
  uint x_off, y_off, n;
  float s, softcap;
};

struct push_rope_kv {  // rope_kv.comp: (q/k norm), RoPE of q and k, k and v into the paged cache
  uint q_off, k_off, v_off, kc_off, vc_off, p_off, s_off, f_off;  // bytes
  uint qn_t, kn_t;      // texel indices of the q/k norm weights (bindings 9, 10; vec4)
  uint D, H, Hkv, T;
  uint n_dims, mode;    // mode 0 normal (adjacent pairs), 1 neox (halves)
  float freq_base, freq_scale, eps;
  uint flags;           // bit 0: freq factors, bit 1: q/k norm
};

struct push_add_norm_ssbo {  // add_rms_norm.comp: x += b; y = rms_norm(x) * w, one workgroup per row
  uint x_off, b_off, w_off, y_off, C;
  float eps;
  uint n_rows;
};

struct push_topk {  // top_k (norm/topk.comp): one workgroup per row
  uint x_off, v_off, i_off;  // bytes: input rows, output values, output indices
  uint n_in;          // elements per row
  uint k, n_rows;
  uint pad;           // index written in padding entries
};

struct push_ssm_conv {  // recurrent/ssm_conv.comp: one invocation per (channel, sequence)
  uint x_off, w_off, s_off, i_off, y_off;  // bytes: input, conv weights, state, seq_info, output
  uint Cc, Kc, n_seqs;
};

struct push_delta_net {  // recurrent/delta_net.comp: one workgroup per (value head, sequence)
  uint qkv_off, b_off, a_off, dt_off, A_off, s_off, i_off, o_off;  // bytes
  uint Hk, Hv, S;
  float eps;
};

struct push_quantize_q8_1 {  // matmul/quantize_q8_1.comp: one workgroup per token row (#20)
  uint x_off, q_off, g_off;  // bytes: x {K, T} f32, q {K/32 blocks of 36 bytes, T}, norm weight g {K}
  uint K, T;
  uint flags;         // bit 0: quantize rms_norm(x) * g instead of x
  float eps;          // rms_norm's epsilon
};
