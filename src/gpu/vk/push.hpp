// C++ mirrors of the push-constant structs in shaders/common/push.glsl (std430-compatible
// scalar layouts: 4-byte fields only). Change both together; the static_asserts catch size drift.
#pragma once

#include <cstdint>

namespace vks::gpu::vk {

struct push_elementwise {
  uint32_t a_off, b_off, y_off, n, b_n;
};
// The output-mode fields both matmul kernels share (push.glsl, common/matmul_out.glsl).
struct matmul_out {
  uint32_t n1 = 0, n2 = 0, y2_off = 0, y3_off = 0, b_off = 0, flags = 0;
};
inline constexpr uint32_t k_mm_bias = 1, k_mm_swiglu = 2, k_mm_norm = 4, k_mm_accumulate = 8;
inline constexpr uint32_t k_mm_swiglu_oai = 16;  // matmul.comp MUL_MAT_ID, with k_mm_swiglu
struct push_matmul {
  uint32_t w_off, x_off, y_off, K, N, T, w_row_bytes, y_stride;
  matmul_out out;
  uint32_t g_off = 0;  // k_mm_norm: the norm weight (binding 6) and epsilon
  float eps = 0.f;
};
struct push_matmul_texel {
  uint32_t w_base, s_base, x_base, y_off, K, N, T, y_stride;
  matmul_out out;
};
struct push_get_rows {
  uint32_t t_off, i_off, o_off, C, M, row_bytes;
  int32_t r0, nr;
};
struct push_rows {
  uint32_t x_off, w_off, y_off, C;
  float eps;
  uint32_t n_rows = 0;
};
struct push_add_norm {
  uint32_t x_t, b_t, w_t, x_off, y_off, C;
  float eps;
  uint32_t n_rows;
};
struct push_rope {
  uint32_t x_off, p_off, f_off, D, H, T, n_dims, mode;
  float freq_base, freq_scale;
  uint32_t has_ff;
  float ext_factor, corr_low, corr_high, mscale;
};
struct push_kv_store {
  uint32_t k_off, v_off, kc_off, vc_off, s_off, W, T;
  uint32_t s_lo = 0, s_n = UINT32_MAX;  // the bound cache window's slots (push.glsl)
};
struct push_rope_kv {
  uint32_t q_off, k_off, v_off, kc_off, vc_off, p_off, s_off, f_off, qn_t, kn_t, D, H, Hkv, T, n_dims, mode;
  float freq_base, freq_scale, eps;
  uint32_t flags;
};
struct push_add_norm_ssbo {
  uint32_t x_off, b_off, w_off, y_off, C;
  float eps;
  uint32_t n_rows;
};
struct push_attention {
  uint32_t q_off, k_off, v_off, bt_off, seq_off, pos_off, o_off, H, Hkv, D, B, maxb, T;
  float scale;
  uint32_t window;
  float softcap;
  uint32_t sink_off, has_sink;  // attention sinks (push.glsl)
};
struct push_attention_flash {  // attention_flash.comp, attention_merge.comp (push.glsl)
  uint32_t q_off, k_off, v_off, bt_off, seq_off, pos_off, o_off, H, Hkv, D, B, maxb, T;
  float scale;
  uint32_t window;
  float softcap;
  uint32_t nsplit, sink_off, flags;
  uint32_t blk_lo = 0, blk_n = UINT32_MAX;  // blocks in the bound K/V windows (push.glsl)
  uint32_t z0 = 0, ztot = 1;                // partial slots: z0 + z of ztot (1: normalized output)
  uint32_t pad = 0;
};
inline constexpr uint32_t k_attention_sinks = 1;
struct push_scale {
  uint32_t x_off, y_off, n;
  float s, softcap;
};

struct push_matmul_id {  // matmul.comp MUL_MAT_ID
  push_matmul mm;
  uint32_t ids_off, x_div, e_bytes, n_exp, e0, e_n;
  float alpha = 0.f, limit = 0.f;  // flags k_mm_swiglu_oai (push.glsl)
};
struct push_moe_route {
  uint32_t x_off, i_off, w_off, E, k, T, flags;
  float scale;
};
inline constexpr uint32_t k_route_norm = 1, k_route_softmax_selected = 2;
struct push_moe_combine {
  uint32_t x_off, w_off, y_off, C, k, n;
};

struct push_add_id {
  uint32_t x_off, b_off, i_off, y_off, N, E, n;
  float alpha, limit;
};

// moe/moe_gather.comp and gemm.comp MUL_MAT_ID (the gathered expert GEMM, push.glsl).
struct push_moe_gather {
  uint32_t ids_off, out_off, R, E, rows_at, tile;
};
struct push_gemm_id {
  push_matmul mm;
  uint32_t route_off, rows_at, x_div, e_bytes, e0, e_n;
  float alpha = 0, limit = 0;  // gpt-oss's clamped SwiGLU (flags k_mm_swiglu_oai)
};
static_assert(sizeof(push_moe_gather) == 24);
static_assert(sizeof(push_gemm_id) == 96);

struct push_topk {
  uint32_t x_off, v_off, i_off, n_in, k, n_rows, pad;
};

struct push_quantize_q8_1 {  // matmul/quantize_q8_1.comp (#20)
  uint32_t x_off, q_off, g_off, K, T, flags;  // flags bit 0: rms_norm(x) * g
  float eps;
};
static_assert(sizeof(push_quantize_q8_1) == 28);
static_assert(sizeof(push_elementwise) == 20);
static_assert(sizeof(push_matmul) == 64);
static_assert(sizeof(push_matmul_texel) == 56);
static_assert(sizeof(push_rope_kv) == 80);
static_assert(sizeof(push_add_norm_ssbo) == 28);
static_assert(sizeof(push_get_rows) == 32);
static_assert(sizeof(push_rows) == 24);
static_assert(sizeof(push_add_norm) == 32);
static_assert(sizeof(push_rope) == 60);
static_assert(sizeof(push_kv_store) == 36);
static_assert(sizeof(push_attention) == 72);
static_assert(sizeof(push_attention_flash) == 96);
static_assert(sizeof(push_scale) == 20);
static_assert(sizeof(push_topk) == 28);
static_assert(sizeof(push_matmul_id) == 96);
static_assert(sizeof(push_moe_route) == 32);
static_assert(sizeof(push_moe_combine) == 24);
static_assert(sizeof(push_add_id) == 36);

struct push_ssm_conv {  // recurrent/ssm_conv.comp
  uint32_t x_off, w_off, s_off, i_off, y_off, Cc, Kc, n_seqs;
};
struct push_delta_net {  // recurrent/delta_net.comp
  uint32_t qkv_off, b_off, a_off, dt_off, A_off, s_off, i_off, o_off, Hk, Hv, S;
  float eps;
};
static_assert(sizeof(push_ssm_conv) == 32);
static_assert(sizeof(push_delta_net) == 48);

}  // namespace vks::gpu::vk
