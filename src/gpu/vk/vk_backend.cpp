// gpu/vk: the Vulkan implementation of gpu::backend. Turns each op into push constants,
// bindings and a grid, and hands it to the recorder (the one dispatch funnel). Per-device
// tuning (workgroup sizes, lanes per matmul row) is chosen once from the device kind and
// subgroup size; every kernel is correct for any choice (shared-memory reductions; the one
// subgroup operation, x_broadcast, is used only where the device reports it). On CPU devices
// matmul, attention, rms_norm, add and silu_mul read through texel views (the *_texel
// kernels) and q8_0 weights are stored planar (planar_q8_0_bytes below). Kernels are named by
// enumerator (spirv_registry.hpp); the per-weight-type ones are resolved once at init.
// Fused ops (matmul_split, matmul_swiglu: output modes of both matmul kernels; rope_kv_store:
// rope_kv.comp; add_rms_norm) fall back to the backend's composition where a tiling or
// binding constraint rules the fused kernel out. Each dispatch reports the bytes it moves
// to the recorder's step counters.
// The class is declared in backend_impl.hpp; its mixture-of-experts ops are in vk_moe.cpp.
#include "gpu/vk/backend_impl.hpp"
#include "gpu/vk/flash_shape.hpp"

namespace vks::gpu {
namespace vk {
namespace {

// The planar q8_0 layout (CPU devices with texel matmuls): the quants of N rows x K as N*K
// int8 (row n at n*K: whole 16-byte texels), then the scales as f32 in block-major order,
// block b of row n at b*Np + n with Np = N rounded up to 16 (padding 0), so the scales of
// 8 consecutive rows for one block are two 16-byte texels. Same information as GGUF's 34-byte
// blocks; upload() converts to it, download() back.
constexpr int64_t k_planar_row_pad = 16; // Np multiple; matmul_texel.comp's R must divide it
int64_t planar_np(int64_t N) { return (N + k_planar_row_pad - 1) / k_planar_row_pad * k_planar_row_pad; }

}  // namespace

uint64_t planar_q8_0_bytes(int64_t K, int64_t N) {
  return static_cast<uint64_t>(N) * static_cast<uint64_t>(K) + static_cast<uint64_t>(K / 32) * static_cast<uint64_t>(planar_np(N)) * 4;
}

void to_planar_q8_0(std::span<const std::byte> src, std::byte* dst, int64_t K, int64_t N) {
  const int64_t KB = K / 32, Np = planar_np(N);
  std::byte* scales = dst + N * K;
  std::memset(scales, 0, static_cast<size_t>(KB * Np * 4));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < KB; ++b) {
      const std::byte* blk = src.data() + (n * KB + b) * 34;
      uint16_t h;
      std::memcpy(&h, blk, 2);
      const float d = f16_to_f32(h);
      std::memcpy(scales + (b * Np + n) * 4, &d, 4);
      std::memcpy(dst + n * K + b * 32, blk + 2, 32);
    }
}

void from_planar_q8_0(const std::byte* src, std::span<std::byte> dst, int64_t K, int64_t N) {
  const int64_t KB = K / 32, Np = planar_np(N);
  const std::byte* scales = src + N * K;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < KB && static_cast<uint64_t>((n * KB + b + 1) * 34) <= dst.size(); ++b) {
      float d;
      std::memcpy(&d, scales + (b * Np + n) * 4, 4);
      const uint16_t h = f32_to_f16(d);
      std::byte* blk = dst.data() + (n * KB + b) * 34;
      std::memcpy(blk, &h, 2);
      std::memcpy(blk + 2, src + n * K + b * 32, 32);
    }
}


// sg: the lane-reducing matmuls reduce by subgroupAdd (the _sg builds; expert matmuls keep _red).
std::array<weight_kernels, k_n_dtypes> resolve_weight_kernels(bool red, bool sg) {
  std::array<weight_kernels, k_n_dtypes> all;
  for (size_t i = 0; i < k_n_dtypes; ++i) {
    const std::string t(traits(static_cast<dtype>(i)).name), r = red ? "_red" : "", m = red && sg ? "_sg" : r;
    all[i] = {kernel_named("matvec_" + t + "_f32" + m), kernel_named("matmul_" + t + "_f32" + m),
              kernel_named("matvec_texel_" + t + "_f32"), kernel_named("matmul_texel_" + t + "_f32"),
              kernel_named("get_rows_" + t + "_f32"), kernel_named("matvec_id_" + t + "_f32" + r),
              kernel_named("gemm_" + t + "_f32")};
    all[i].gemm_id = kernel_named("gemm_id_" + t + "_f32");
    all[i].gemm_id_bn32 = kernel_named("gemm_id_" + t + "_f32_bn32");
  }
  return all;
}

// matvec_q8_1.comp's builds for the tuning's act (none when off) and lane reduction.
void resolve_q8_kernels(std::array<weight_kernels, k_n_dtypes>& all, act_quant act, bool sg) {
  if (act == act_quant::off) return;
  const std::string v = std::string(act == act_quant::q8_dot ? "_dot" : "") + (sg ? "_sg" : "");
  for (size_t i = 0; i < k_n_dtypes; ++i)
    all[i].matvec_q8 = kernel_named("matvecq_" + std::string(traits(static_cast<dtype>(i)).name) + "_q8_1" + v);
}

// The kernel `k`, asserting that the weight type has it.

void vk_backend::get_rows(const tensor& out, const tensor& table, const tensor& idx) {
  const int64_t C = table.ne[0], R = table.n_rows(), M = idx.ne[0];
  VKS_ASSERT(out.ne[0] == C && out.n_rows() >= M, "get_rows: shape mismatch");
  // Bytes moved: the M rows gathered (the table is bound whole), the indices, the output.
  const uint64_t moved = static_cast<uint64_t>(M) * (row_bytes(table.type, u32(C)) + static_cast<uint64_t>(C) * 4 + 4);
  if (is_planar(table)) {  // bound whole (planar tensors fit maxStorageBufferRange)
    const bound bt = bind(table, false, 0, planar_q8_0_bytes(C, R)), bi = bind(idx, false), bo = bind(out, true);
    const uint32_t p = pipe(kernel::get_rows_q8_0p_f32, tune_.wg_elem);
    for_row_chunks(M, [&](int64_t m0, int64_t mn) {
      const vk::push_get_rows pc{bt.off, bi.off + u32(m0 * 4), bo.off + u32(m0 * C * 4), u32(C), u32(mn),
                                 u32(static_cast<uint64_t>(C) * static_cast<uint64_t>(R)), 0, static_cast<int32_t>(planar_np(R))};
      run(p, {&bt, &bi, &bo}, pc, cdiv(C, tune_.wg_elem), u32(mn), {}, m0 == 0 ? moved : 1, true);
    });
    return;
  }
  const uint64_t rb = row_bytes(table.type, u32(C));
  const uint32_t p = pipe(need(kernels_of(table.type).get_rows), tune_.wg_elem);
  const bound bi = bind(idx, false), bo = bind(out, true);
  const uint64_t max_rows = std::max<uint64_t>(1, (ctx_->caps().max_storage_range - ctx_->caps().min_storage_align - 64) / rb);
  for (int64_t r0 = 0; r0 < R; r0 += static_cast<int64_t>(max_rows)) {
    const int64_t nr = std::min<int64_t>(R - r0, static_cast<int64_t>(max_rows));
    const bound bt = bind(table, false, static_cast<uint64_t>(r0) * rb, static_cast<uint64_t>(nr) * rb);
    for_row_chunks(M, [&](int64_t m0, int64_t mn) {
      const vk::push_get_rows pc{bt.off, bi.off + u32(m0 * 4), bo.off + u32(m0 * C * 4), u32(C), u32(mn),
                                 static_cast<uint32_t>(rb), static_cast<int32_t>(r0), static_cast<int32_t>(nr)};
      run(p, {&bt, &bi, &bo}, pc, cdiv(C, tune_.wg_elem), u32(mn), {}, r0 == 0 && m0 == 0 ? moved : 1, true);  // counted once
    });
  }
}

void vk_backend::matmul(const tensor& y, const tensor& w, const tensor& x) {
  const int64_t K = w.ne[0], N = w.n_rows(), T = x.n_rows();
  VKS_ASSERT(x.ne[0] == K && y.ne[0] == N && y.n_rows() == T, "matmul: shape mismatch");
  VKS_ASSERT(x.type == dtype::f32 && y.type == dtype::f32, "matmul: activations must be f32");
  const bool done = matmul_any(y, w, x, {});
  VKS_ASSERT(done, "matmul: no kernel applies");
}

void vk_backend::matmul_split(std::span<const tensor> ys, const tensor& w, const tensor& x, const tensor& bias) {
  VKS_ASSERT(!ys.empty() && ys.size() <= 3, "matmul_split: 1 to 3 outputs");
  int64_t n = 0;
  for (const auto& y : ys) {
    VKS_ASSERT(y.n_rows() == x.n_rows() && y.type == dtype::f32, "matmul_split: output shape mismatch");
    n += y.ne[0];
  }
  VKS_ASSERT(n == w.n_rows() && x.ne[0] == w.ne[0] && (bias.ne[0] == 0 || bias.ne[0] == n), "matmul_split: shape mismatch");
  if (!matmul_any(ys[0], w, x, split_mode(ys, bias))) backend::matmul_split(ys, w, x, bias);
}

vk_backend::mm_mode vk_backend::split_mode(std::span<const tensor> ys, const tensor& bias) {
  mm_mode m;
  m.y2 = ys.size() > 1 ? &ys[1] : nullptr;
  m.y3 = ys.size() > 2 ? &ys[2] : nullptr;
  m.bias = bias.ne[0] > 0 ? &bias : nullptr;
  m.n1 = ys[0].ne[0];
  m.n2 = ys.size() > 1 ? ys[1].ne[0] : 0;
  return m;
}

void vk_backend::norm_matmul_split(std::span<const tensor> ys, const tensor& w, const tensor& x, const tensor& norm_w,
                                   float eps, const tensor& bias, const tensor& h) {
  VKS_ASSERT(!ys.empty() && ys.size() <= 3 && norm_w.ne[0] == x.ne[0] && norm_w.type == dtype::f32,
             "norm_matmul_split: shape mismatch");
  mm_mode m = split_mode(ys, bias);
  m.norm = &norm_w;
  m.eps = eps;
  if (!matmul_any(ys[0], w, x, m)) backend::norm_matmul_split(ys, w, x, norm_w, eps, bias, h);
}

void vk_backend::norm_matmul_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& norm_w, float eps,
                                    const tensor& h, const tensor& scratch) {
  const int64_t F = w.n_rows() / 2;
  VKS_ASSERT(w.n_rows() == 2 * F && y.ne[0] == F && y.n_rows() == x.n_rows() && x.ne[0] == w.ne[0] &&
                 norm_w.ne[0] == x.ne[0] && norm_w.type == dtype::f32,
             "norm_matmul_swiglu: shape mismatch");
  mm_mode m;
  m.swiglu = true;
  m.n1 = F;
  m.norm = &norm_w;
  m.eps = eps;
  if (!matmul_any(y, w, x, m)) backend::norm_matmul_swiglu(y, w, x, norm_w, eps, h, scratch);
}

void vk_backend::matmul_add(const tensor& y, const tensor& w, const tensor& x, const tensor& scratch) {
  const int64_t K = w.ne[0], N = w.n_rows(), T = x.n_rows();
  VKS_ASSERT(x.ne[0] == K && y.ne[0] == N && y.n_rows() == T && y.type == dtype::f32 && x.type == dtype::f32,
             "matmul_add: shape mismatch");
  mm_mode m;
  m.accumulate = true;
  if (!matmul_any(y, w, x, m)) backend::matmul_add(y, w, x, scratch);
}

void vk_backend::matmul_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& scratch) {
  const int64_t F = w.n_rows() / 2;
  VKS_ASSERT(w.n_rows() == 2 * F && y.ne[0] == F && y.n_rows() == x.n_rows() && x.ne[0] == w.ne[0],
             "matmul_swiglu: shape mismatch");
  mm_mode m;
  m.swiglu = true;
  m.n1 = F;
  if (matmul_any(y, w, x, m)) return;
  // Not fusable here (tile or alignment constraints): both halves in one split matmul.
  const tensor halves[] = {y, scratch};
  matmul_split(halves, w, x, tensor{.ne = {0, 1, 1, 1}});
  silu_mul(y, y, scratch);
}

// Binds a mode's extra outputs and bias (the dummy when unused) and fills its push fields.
vk::matmul_out vk_backend::mm_bind(const mm_mode& m, int64_t n_rows, bound& b2, bound& b3, bound& bb) const {
  vk::matmul_out o;
  b2 = m.y2 ? bind(*m.y2, true) : dummy_bound();
  b3 = m.y3 ? bind(*m.y3, true) : dummy_bound();
  bb = m.bias ? bind(*m.bias, false) : dummy_bound();
  o.n1 = m.n1 ? u32(m.n1) : u32(n_rows);
  o.n2 = u32(m.n2);
  o.y2_off = b2.off;
  o.y3_off = b3.off;
  o.b_off = bb.off;
  o.flags = (m.bias ? vk::k_mm_bias : 0) | (m.swiglu ? vk::k_mm_swiglu : 0) | (m.norm ? vk::k_mm_norm : 0) |
            (m.accumulate ? vk::k_mm_accumulate : 0);
  return o;
}

// The one matmul path (plain, split or SwiGLU): the texel kernel where it applies, else
// gemm.comp (GPU tunings, more than 8 tokens), else matmul.comp. false, recording nothing,
// when the mode cannot run here (a weight split into several bindings, a SwiGLU tiling that
// does not divide F); the caller composes.
bool vk_backend::matmul_any(const tensor& y, const tensor& w, const tensor& x, const mm_mode& m) {
  const int64_t K = w.ne[0], N = w.n_rows(), T = x.n_rows();
  const bool fused_io = m.norm || m.accumulate;  // matmul.comp only
  if (!fused_io && matmul_texel(y, w, x, m)) return true;
  const bool plain = !m.swiglu && !m.y2 && !m.bias;
  if (is_planar(w) && (!plain || fused_io)) return false;  // the texel kernel's tiling did not fit: compose
  if (m.norm && !fuses_norm_into_matmul()) return false;   // the prologue is in the lane-reduction build
  VKS_ASSERT(!is_planar(w), "matmul: a planar q8_0 tensor needs the texel kernel (16-byte aligned x rows)");
  if (matmul_q8_1(y, w, x, m)) return true;
  const bool vec = T == 1;
  // gemm.comp: 64 rows (32 SwiGLU features) x 64 tokens per workgroup, any F.
  const bool tiled = tune_.gemm && T > 8 && kernels_of(w.type).gemm.has_value();
  const kernel k = need(tiled ? kernels_of(w.type).gemm : vec ? kernels_of(w.type).matvec : kernels_of(w.type).matmul);
  const uint32_t rows = tune_.lanes > 1 ? 1 : (vec ? tune_.rows_vec : tune_.rows_mat);
  const uint32_t xb = tune_.lanes == 1 && tune_.x_broadcast && w.type == dtype::q8_0;
  // Tokens per invocation: the shader's 8 (1 for matvec); without lane reduction, the next
  // power of two >= T when T < 8, so 2-7 tokens are not padded to 8 (the lane-reducing
  // builds stop their token loops at T instead: one pipeline for every batch size).
  const uint32_t tb = vec ? 1 : (tune_.lanes == 1 ? std::min<uint32_t>(8, std::bit_ceil(u32(T))) : 8);
  const uint32_t rows_per_wg = tune_.wg_matmul / tune_.lanes * rows;
  const uint64_t rb = row_bytes(w.type, u32(K));
  const uint64_t max_rows = std::max<uint64_t>(1, (ctx_->caps().max_storage_range - ctx_->caps().min_storage_align - 64) / rb);
  if (!plain && static_cast<uint64_t>(N) > max_rows) return false;           // one binding of w only
  if (!tiled && m.swiglu && (rows_per_wg % 2 != 0 || (tune_.lanes == 1 && rows % 2 != 0))) return false;  // gate + up pairs
  const uint32_t p = tiled ? pipe(k, 256)
                           : pipe(k, tune_.wg_matmul, tune_.lanes, rows, xb, tune_.lanes == 1 && !vec ? tb : 0,
                                  tune_.lanes > 1 ? tune_.sg_size : 0);
  const bound bx = bind(x, false), by = bind(y, true);
  const bound bg = m.norm ? bind(*m.norm, false) : dummy_bound();
  bound b2, b3, bb;
  for (int64_t n0 = 0; n0 < N; n0 += static_cast<int64_t>(max_rows)) {
    const int64_t nn = std::min<int64_t>(N - n0, static_cast<int64_t>(max_rows));
    const bound bw = bind(w, false, static_cast<uint64_t>(n0) * rb, static_cast<uint64_t>(nn) * rb);
    const vk::matmul_out o = mm_bind(m, nn, b2, b3, bb);
    const vk::push_matmul pc{bw.off, bx.off, by.off + u32(n0) * 4, u32(K), u32(nn), u32(T), static_cast<uint32_t>(rb),
                             m.swiglu ? u32(m.n1) : (m.y2 ? u32(m.n1) : u32(N)), o, bg.off, m.eps};
    if (tiled) {
      run(p, {&bw, &bx, &by, &b2, &b3, &bb, &bg}, pc, m.swiglu ? cdiv(m.n1, 32) : cdiv(nn, 64), cdiv(T, 64), {}, 0, true);
      continue;
    }
    const uint32_t gx = m.swiglu ? cdiv(m.n1, rows_per_wg / 2) : cdiv(nn, rows_per_wg);
    run(p, {&bw, &bx, &by, &b2, &b3, &bb, &bg}, pc, gx, cdiv(T, tb), {}, 0, true);
  }
  return true;
}

// x {K, T} (T <= 8) as q8_1 blocks in act_q8_ (grown as needed), rms_norm(x) * g when m.norm:
// quantize_q8_1.comp, one workgroup per row. The bound blocks, or nullopt (nothing recorded)
// where the scratch cannot be allocated.
std::optional<bound> vk_backend::quantize_q8_1(const tensor& x, const mm_mode& m) {
  const int64_t K = x.ne[0], T = x.n_rows();
  const uint64_t need = static_cast<uint64_t>(K / 32 * T) * 36;
  if (act_q8_.empty() || act_q8_.back().nbytes() < need) {
    const uint64_t n = std::max<uint64_t>(need, act_q8_.empty() ? 64 * 1024 : 2 * act_q8_.back().nbytes());
    auto t = alloc(dtype::i32, {static_cast<int64_t>(n / 4 + 1), 1, 1, 1}, "q8_1 activations");
    if (!t) return std::nullopt;
    act_q8_.push_back(*t);
  }
  const uint32_t wg = std::min<uint32_t>(64, std::bit_floor(tune_.wg_matmul));
  const bound bx = bind(x, false), bq = bind(act_q8_.back(), true, 0, need);
  const bound bg = m.norm ? bind(*m.norm, false) : dummy_bound();
  const vk::push_quantize_q8_1 pc{bx.off, bq.off, bg.off, u32(K), u32(T), m.norm ? 1u : 0u, m.eps};
  run(pipe(kernel::quantize_q8_1_f32, wg), {&bx, &bq, &bg}, pc, u32(T));
  bound r = bind(act_q8_.back(), false, 0, need);
  return r;
}

// The decode matvec with q8_1 activations (tuning's act; T <= 8 columns, an integer-dot
// weight type): quantize_q8_1, then matvec_q8_1.comp over the weight's bindings. false,
// recording nothing, where it does not apply (the f32 kernels run instead).
bool vk_backend::matmul_q8_1(const tensor& y, const tensor& w, const tensor& x, const mm_mode& m) {
  const int64_t K = w.ne[0], N = w.n_rows(), T = x.n_rows();
  const std::optional<kernel> k = kernels_of(w.type).matvec_q8;
  if (!k || T > 8 || is_planar(w)) return false;
  const uint32_t rows_per_wg = tune_.wg_matmul / tune_.lanes;
  if (m.swiglu && rows_per_wg % 2 != 0) return false;  // gate + up pairs
  const uint64_t rb = row_bytes(w.type, u32(K));
  const uint64_t max_rows = std::max<uint64_t>(1, (ctx_->caps().max_storage_range - ctx_->caps().min_storage_align - 64) / rb);
  const bool plain = !m.swiglu && !m.y2 && !m.bias;
  if (!plain && static_cast<uint64_t>(N) > max_rows) return false;  // one binding of w only
  const std::optional<bound> bq = quantize_q8_1(x, m);
  if (!bq) return false;
  const uint32_t p = pipe(*k, tune_.wg_matmul, tune_.lanes, 1, 0, 0, tune_.sg_size);
  const bound by = bind(y, true);
  bound b2, b3, bb;
  mm_mode mo = m;
  mo.norm = nullptr;  // applied by quantize_q8_1
  for (int64_t n0 = 0; n0 < N; n0 += static_cast<int64_t>(max_rows)) {
    const int64_t nn = std::min<int64_t>(N - n0, static_cast<int64_t>(max_rows));
    const bound bw = bind(w, false, static_cast<uint64_t>(n0) * rb, static_cast<uint64_t>(nn) * rb);
    const vk::matmul_out o = mm_bind(mo, nn, b2, b3, bb);
    const vk::push_matmul pc{bw.off, bq->off, by.off + u32(n0) * 4, u32(K), u32(nn), u32(T), static_cast<uint32_t>(rb),
                             m.swiglu ? u32(m.n1) : (m.y2 ? u32(m.n1) : u32(N)), o, 0, 0.f};
    const uint32_t gx = m.swiglu ? cdiv(m.n1, rows_per_wg / 2) : cdiv(nn, rows_per_wg);
    run(p, {&bw, &*bq, &by, &b2, &b3, &bb}, pc, gx, 1, {}, 0, true);
  }
  return true;
}

// The texel-fetch matmul (CPU devices): false, recording nothing, when it does not apply
// (tuning, weight type, alignment, a SwiGLU F the tile does not divide), and the caller
// uses matmul.comp.
bool vk_backend::matmul_texel(const tensor& y, const tensor& w, const tensor& x, const mm_mode& m) {
  const int64_t K = w.ne[0], N = w.n_rows(), T = x.n_rows();
  if (!tune_.texel || K % 4 != 0) return false;
  const bool planar = is_planar(w);
  VKS_ASSERT(!planar || whole(w), "matmul: a planar q8_0 tensor is used whole");
  if (!planar && w.type != dtype::f32 && !(w.type == dtype::f16 && K % 8 == 0)) return false;
  const bool vec = T == 1;
  const uint32_t rows = vec ? tune_.rows_tvec : tune_.rows_tmat;
  // SwiGLU: R/2 features per invocation, the scales of 4 rows per texel (matmul_texel.comp).
  if (m.swiglu && (rows % 8 != 0 || m.n1 % (rows / 2) != 0)) return false;
  // Planar q8_0: one view covers the quants and (texel-aligned after them) the scales.
  const uint64_t w_bytes = planar ? planar_q8_0_bytes(K, N) : w.nbytes();
  const auto bw = bind_texel(w, 16, 0, w_bytes);
  const auto bx = bind_texel(x, 16, 0, x.nbytes());
  if (!bw || !bx) return false;
  const uint32_t tb = vec ? 1 : std::min<uint32_t>(tune_.tb_tmat, std::bit_ceil(u32(T)));
  const kernel k = need(vec ? kernels_of(w.type).matvec_texel : kernels_of(w.type).matmul_texel);
  const uint32_t p = pipe(k, tune_.wg_matmul, 1, rows, 0, tb);
  const bound by = bind(y, true);
  bound b2, b3, bb;
  const vk::matmul_out o = mm_bind(m, N, b2, b3, bb);
  const uint32_t s_base = planar ? bw->off + u32(K * N / 16) : 0;
  const vk::push_matmul_texel pc{bw->off, s_base, bx->off, by.off, u32(K), u32(N), u32(T),
                                 m.swiglu || m.y2 ? u32(m.n1) : u32(N), o};
  const uint32_t gx = cdiv(m.swiglu ? m.n1 : N, int64_t{tune_.wg_matmul} * (m.swiglu ? rows / 2 : rows));
  run(p, {&by, &b2, &b3, &bb}, pc, gx, cdiv(T, tb), {{k_storage_bindings, &*bw}, {k_storage_bindings + 1, &*bx}}, 0, true);
  return true;
}

// add_texel / silu_mul_texel (CPU devices): false, recording nothing, when they do not
// apply (tuning, sizes not multiples of 4, offsets not 16-byte aligned).
bool vk_backend::elementwise_texel(kernel k, const tensor& y, const tensor& a, const tensor& b) {
  const int64_t n = a.n_elements(), bn = b.n_elements();
  if (!tune_.texel || n % 4 != 0 || bn % 4 != 0) return false;
  const auto ta = bind_texel(a, 16, 0, a.nbytes()), tb = bind_texel(b, 16, 0, b.nbytes());
  const bound byy = bind(y, true);
  if (!ta || !tb || byy.off % 16 != 0) return false;
  const vk::push_elementwise pc{ta->off, tb->off, byy.off, u32(n), u32(bn)};
  const uint32_t groups = cdiv(n / 4, tune_.wg_elem), gx = std::min<uint32_t>(groups, max_x());
  run(pipe(k, tune_.wg_elem), {&byy}, pc, gx, cdiv(groups, gx), {{k_storage_bindings, &*tb}, {k_storage_bindings + 1, &*ta}});
  return true;
}

void vk_backend::add(const tensor& y, const tensor& a, const tensor& b) {
  const int64_t n = a.n_elements(), bn = b.n_elements();
  VKS_ASSERT(bn == n || bn == a.ne[0], "add: b must match a or be one row");
  if (elementwise_texel(kernel::add_texel_f32, y, a, b)) return;
  const bound ba = bind(a, false), bb = bind(b, false), byy = bind(y, true);
  const vk::push_elementwise pc{ba.off, bb.off, byy.off, u32(n), u32(bn)};
  const uint32_t groups = cdiv(n, tune_.wg_elem), gx = std::min<uint32_t>(groups, max_x());
  run(pipe(kernel::add_f32, tune_.wg_elem), {&ba, &bb, &byy}, pc, gx, cdiv(groups, gx));
}

void vk_backend::silu_mul(const tensor& y, const tensor& gate, const tensor& up) {
  const int64_t n = gate.n_elements();
  VKS_ASSERT(up.n_elements() == n && y.n_elements() == n, "silu_mul: shape mismatch");
  if (elementwise_texel(kernel::silu_mul_texel_f32, y, gate, up)) return;
  const bound ba = bind(gate, false), bb = bind(up, false), byy = bind(y, true);
  const vk::push_elementwise pc{ba.off, bb.off, byy.off, u32(n), u32(n)};
  const uint32_t groups = cdiv(n, tune_.wg_elem), gx = std::min<uint32_t>(groups, max_x());
  run(pipe(kernel::silu_mul_f32, tune_.wg_elem), {&ba, &bb, &byy}, pc, gx, cdiv(groups, gx));
}

// Gated DeltaNet (#23): storage-buffer kernels under every tuning (sequential in tokens; one
// invocation per channel and sequence for the conv, one workgroup per head and sequence for
// the delta rule; with tuning::delta_chunk, multi-token sequences take the chunked WY kernel).
void vk_backend::ssm_conv(const tensor& y, const tensor& x, const tensor& w, const tensor& state, const tensor& seq_info) {
  const int64_t Cc = x.ne[0], Kc = w.ne[0], S = seq_info.n_rows();
  VKS_ASSERT(Kc >= 1 && Kc <= 8 && w.ne[1] == Cc && y.ne[0] == Cc && y.n_rows() == x.n_rows() &&
                 state.ne[0] == (Kc - 1) * Cc && seq_info.ne[0] == k_seq_info_fields,
             "ssm_conv: shape mismatch (conv width 1..8)");
  const bound bx = bind(x, false), bw = bind(w, false), bs = bind(state, true), bi = bind(seq_info, false),
              byy = bind(y, true);
  const vk::push_ssm_conv pc{bx.off, bw.off, bs.off, bi.off, byy.off, u32(Cc), u32(Kc), u32(S)};
  run(pipe(kernel::ssm_conv_f32, tune_.wg_elem), {&bx, &bw, &bs, &bi, &byy}, pc, cdiv(Cc, tune_.wg_elem), u32(S));
}

void vk_backend::delta_net(const tensor& out, const tensor& qkv, const tensor& beta_raw, const tensor& alpha_raw,
                           const tensor& dt_bias, const tensor& a, const tensor& state, const tensor& seq_info,
                           const delta_net_params& p) {
  const int64_t S = p.head_dim, Hv = p.n_v_heads;
  VKS_ASSERT(p.n_k_heads > 0 && Hv % p.n_k_heads == 0 && qkv.ne[0] == (2 * p.n_k_heads + Hv) * S &&
                 out.ne[0] == Hv * S && beta_raw.ne[0] == Hv && alpha_raw.ne[0] == Hv && state.ne[0] == S * S * Hv &&
                 seq_info.ne[0] == k_seq_info_fields,
             "delta_net: shape mismatch");
  const bound bq = bind(qkv, false), bb = bind(beta_raw, false), ba = bind(alpha_raw, false), bd = bind(dt_bias, false),
              bA = bind(a, false), bs = bind(state, true), bi = bind(seq_info, false), bo = bind(out, true);
  const vk::push_delta_net pc{bq.off, bb.off, ba.off, bd.off, bA.off, bs.off, bi.off, bo.off,
                              static_cast<uint32_t>(p.n_k_heads), u32(Hv), u32(S), p.eps};
  const uint32_t wg = std::min<uint32_t>(64, u32(S)), chunk = delta_chunk_of(S);
  const uint32_t k = chunk > 0 && qkv.n_rows() > seq_info.n_rows()  // a sequence with several tokens
                         ? pipe(kernel::delta_net_chunk_f32, wg, chunk, u32(S))
                         : pipe(kernel::delta_net_f32, wg);
  run(k, {&bq, &bb, &ba, &bd, &bA, &bs, &bi, &bo}, pc, u32(Hv), u32(seq_info.n_rows()));
}

// The chunk of delta_net_chunk.comp for head width S: tuning::delta_chunk (at most 64) lowered
// (to no less than 4) until its shared arrays (3 C S + 2 C C + 2 C floats) fit; 0: the recurrent kernel.
// Workgroups of min(64, S): on lavapipe fewer lanes (several columns each, 8 or 16 for S 64 or 128)
// gave wrong results for S >= 64, not understood yet, so the width is fixed and S <= 128.
uint32_t vk_backend::delta_chunk_of(int64_t S) const {
  const uint64_t smem = ctx_->caps().shared_memory;
  if (S > 128) return 0;  // tested with at most 2 state columns per invocation (64 lanes)
  for (uint32_t c = std::min<uint32_t>(tune_.delta_chunk, 64); c >= 4; c /= 2)
    if (smem == 0 || 4 * (3 * c * uint64_t(S) + 2 * uint64_t{c} * c + 2 * c) <= smem) return c;
  return 0;
}

void vk_backend::sigmoid_mul(const tensor& y, const tensor& gate, const tensor& x) {
  const int64_t n = x.n_elements();
  const bool per_row = gate.n_elements() != n;  // one gate per row of x (b_n: the row length)
  VKS_ASSERT(y.n_elements() == n && (!per_row || gate.n_elements() == x.n_rows()), "sigmoid_mul: shape mismatch");
  const bound ba = bind(gate, false), bb = bind(x, false), byy = bind(y, true);
  const vk::push_elementwise pc{ba.off, bb.off, byy.off, u32(n), u32(per_row ? x.ne[0] : 1)};
  const uint32_t groups = cdiv(n, tune_.wg_elem), gx = std::min<uint32_t>(groups, max_x());
  run(pipe(kernel::sigmoid_mul_f32, tune_.wg_elem), {&ba, &bb, &byy}, pc, gx, cdiv(groups, gx));
}

// gelu_mul and scale: storage-buffer kernels under every tuning (Gemma's few per layer).
void vk_backend::gelu_mul(const tensor& y, const tensor& gate, const tensor& up) {
  const int64_t n = gate.n_elements();
  VKS_ASSERT(up.n_elements() == n && y.n_elements() == n, "gelu_mul: shape mismatch");
  const bound ba = bind(gate, false), bb = bind(up, false), byy = bind(y, true);
  const vk::push_elementwise pc{ba.off, bb.off, byy.off, u32(n), u32(n)};
  const uint32_t groups = cdiv(n, tune_.wg_elem), gx = std::min<uint32_t>(groups, max_x());
  run(pipe(kernel::gelu_mul_f32, tune_.wg_elem), {&ba, &bb, &byy}, pc, gx, cdiv(groups, gx));
}

void vk_backend::scale(const tensor& y, const tensor& x, float s, float softcap) {
  const int64_t n = x.n_elements();
  VKS_ASSERT(y.n_elements() == n, "scale: shape mismatch");
  const bound bx = bind(x, false), byy = bind(y, true);
  const vk::push_scale pc{bx.off, byy.off, u32(n), s, softcap};
  const uint32_t groups = cdiv(n, tune_.wg_elem), gx = std::min<uint32_t>(groups, max_x());
  run(pipe(kernel::scale_f32, tune_.wg_elem), {&bx, &byy}, pc, gx, cdiv(groups, gx));
}

void vk_backend::rms_norm(const tensor& y, const tensor& x, const tensor& w, float eps) {
  VKS_ASSERT(w.ne[0] == x.ne[0] && y.n_elements() == x.n_elements(), "rms_norm: shape mismatch");
  if (tune_.texel && x.ne[0] % 4 == 0) {  // rms_norm_texel: one invocation per row, no barriers
    const auto tx = bind_texel(x, 16, 0, x.nbytes()), tw = bind_texel(w, 16, 0, w.nbytes());
    const bound byy = bind(y, true);
    if (tx && tw && byy.off % 16 == 0) {
      const vk::push_rows pc{tx->off, tw->off, byy.off, u32(x.ne[0]), eps, u32(x.n_rows())};
      run(pipe(kernel::rms_norm_texel_f32, tune_.wg_matmul), {&byy}, pc, cdiv(x.n_rows(), tune_.wg_matmul), 1,
          {{k_storage_bindings, &*tw}, {k_storage_bindings + 1, &*tx}}, 0, true);
      return;
    }
  }
  const bound bx = bind(x, false), bw = bind(w, false), byy = bind(y, true);
  const vk::push_rows pc{bx.off, bw.off, byy.off, u32(x.ne[0]), eps, u32(x.n_rows())};
  run(pipe(kernel::rms_norm_f32, tune_.wg_rows), {&bx, &bw, &byy}, pc, u32(x.n_rows()), 1, {}, 0, true);
}

void vk_backend::add_rms_norm(const tensor& x, const tensor& b, const tensor& y, const tensor& w, float eps) {
  VKS_ASSERT(b.n_elements() == x.n_elements() && y.n_elements() == x.n_elements() && w.ne[0] == x.ne[0],
             "add_rms_norm: shape mismatch");
  if (tune_.texel && x.ne[0] % 4 == 0) {  // add_rms_norm_texel: one dispatch instead of two
    const auto tx = bind_texel(x, 16, 0, x.nbytes()), tb = bind_texel(b, 16, 0, b.nbytes()),
               tw = bind_texel(w, 16, 0, w.nbytes());
    const bound bxo = bind(x, true), byy = bind(y, true);
    if (tx && tb && tw && bxo.off % 16 == 0 && byy.off % 16 == 0) {
      const vk::push_add_norm pc{tx->off, tb->off, tw->off, bxo.off, byy.off, u32(x.ne[0]), eps, u32(x.n_rows())};
      run(pipe(kernel::add_rms_norm_texel_f32, tune_.wg_matmul), {&bxo, &byy}, pc, cdiv(x.n_rows(), tune_.wg_matmul), 1,
          {{k_storage_bindings, &*tw}, {k_storage_bindings + 1, &*tx}, {k_storage_bindings + 2, &*tb}}, 0, true);
      return;
    }
  }
  // add_rms_norm.comp (GPUs, and rows the texel kernel cannot take): one workgroup per row.
  const bound bx = bind(x, true), bb = bind(b, false), bw = bind(w, false), byy = bind(y, true);
  const vk::push_add_norm_ssbo pc{bx.off, bb.off, bw.off, byy.off, u32(x.ne[0]), eps, u32(x.n_rows())};
  run(pipe(kernel::add_rms_norm_f32, tune_.wg_rows), {&bx, &bb, &bw, &byy}, pc, u32(x.n_rows()), 1, {}, 0, true);
}

void vk_backend::rope_kv_store(const tensor& q, const tensor& k, const tensor& v, const tensor& kc, const tensor& vc,
                               const tensor& pos, const tensor& slots, int head_dim, const rope_params& p,
                               const tensor& ff, const tensor& q_norm, const tensor& k_norm, float eps) {
  const int64_t D = head_dim, T = q.n_rows(), H = q.ne[0] / D, Hkv = k.ne[0] / D;
  // rope_kv.comp stages a head row of at most 512 in shared memory, by pairs, and applies the
  // plain rotation only: YaRN's ramp and magnitude go through the composition (rope.comp).
  // A pool over one binding (kv_partition.hpp): kv_store writes it window by window, and
  // this kernel would rope q once per window.
  if (D % 2 != 0 || D > 512 || p.ext_factor != 0.f || p.mscale != 1.f || over_range(kc) || over_range(vc)) {
    backend::rope_kv_store(q, k, v, kc, vc, pos, slots, head_dim, p, ff, q_norm, k_norm, eps);
    return;
  }
  VKS_ASSERT(D > 0 && q.ne[0] == H * D && k.ne[0] == Hkv * D && v.ne[0] == k.ne[0] &&
                 kc.ne[0] == k.ne[0] && kc.type == vc.type && p.n_dims > 0 && p.n_dims <= D && p.n_dims % 2 == 0,
             "rope_kv_store: shape mismatch");
  const bool norm = q_norm.ne[0] > 0, has_ff = ff.ne[0] > 0;
  std::optional<bound> tqn, tkn;
  if (norm) {
    tqn = bind_texel(q_norm, 16, 0, q_norm.nbytes());
    tkn = bind_texel(k_norm, 16, 0, k_norm.nbytes());
    if (!tqn || !tkn || D % 4 != 0) {  // norm weights not texel-aligned: the composition
      backend::rope_kv_store(q, k, v, kc, vc, pos, slots, head_dim, p, ff, q_norm, k_norm, eps);
      return;
    }
  }
  const bool f16 = kc.type == dtype::f16, q8 = kc.type == dtype::q8_0;
  if (q8 && D % 32 != 0) {
    backend::rope_kv_store(q, k, v, kc, vc, pos, slots, head_dim, p, ff, q_norm, k_norm, eps);
    return;
  }
  const bound bq = bind(q, true), bk = bind(k, false), bv = bind(v, false), bkc = bind(kc, true), bvc = bind(vc, true),
              bp = bind(pos, false), bs = bind(slots, false);
  const bound bf = has_ff ? bind(ff, false) : dummy_bound();
  const vk::push_rope_kv pc{bq.off, bk.off, bv.off, bkc.off, bvc.off, bp.off, bs.off, bf.off,
                            norm ? tqn->off : 0, norm ? tkn->off : 0, u32(D), u32(H), u32(Hkv), u32(T),
                            static_cast<uint32_t>(p.n_dims), p.mode == rope_mode::neox ? 1u : 0u, p.freq_base,
                            p.freq_scale, eps, (has_ff ? 1u : 0u) | (norm ? 2u : 0u)};
  // Tokens [t0, t0 + tn) of q, k, v, pos and slots (rows in chunks within the grid's height).
  const auto chunk = [&](int64_t t0, int64_t tn) {
    vk::push_rope_kv c = pc;
    c.q_off += u32(t0 * H * D * 4);
    c.k_off += u32(t0 * Hkv * D * 4);
    c.v_off += u32(t0 * Hkv * D * 4);
    c.p_off += u32(t0 * 4);
    c.s_off += u32(t0 * 4);
    c.T = u32(tn);
    return c;
  };
  // Bytes moved: q read and written, k and v read, one cache row each per token (the caches
  // are bound whole).
  const uint64_t moved = 2 * q.nbytes() + k.nbytes() + v.nbytes() + pos.nbytes() + slots.nbytes() +
                         2 * static_cast<uint64_t>(T) * row_bytes(kc.type, static_cast<uint64_t>(kc.ne[0]));
  const uint32_t pl =
      pipe(q8 ? kernel::rope_kv_q8_0_f32 : f16 ? kernel::rope_kv_f16_f32 : kernel::rope_kv_f32_f32, tune_.wg_attn);
  for_row_chunks(T, [&](int64_t t0, int64_t tn) {
    const uint64_t mv = t0 == 0 ? moved : 1;  // counted once
    if (norm)
      run(pl, {&bq, &bk, &bv, &bkc, &bvc, &bp, &bs, &bf}, chunk(t0, tn), u32(H + 2 * Hkv), u32(tn),
          {{k_storage_bindings + 1, &*tqn}, {k_storage_bindings + 2, &*tkn}}, mv, true);
    else
      run(pl, {&bq, &bk, &bv, &bkc, &bvc, &bp, &bs, &bf}, chunk(t0, tn), u32(H + 2 * Hkv), u32(tn), {}, mv, true);
  });
}

void vk_backend::softmax(const tensor& y, const tensor& x) {
  const bound bx = bind(x, false), byy = bind(y, true);
  const vk::push_rows pc{bx.off, 0, byy.off, u32(x.ne[0]), 0.f, u32(x.n_rows())};
  run(pipe(kernel::softmax_f32, tune_.wg_rows), {&bx, &bx, &byy}, pc, u32(x.n_rows()), 1, {}, 0, true);
}

void vk_backend::argmax(const tensor& out, const tensor& x) {
  const bound bx = bind(x, false), bo = bind(out, true);
  const vk::push_rows pc{bx.off, 0, bo.off, u32(x.ne[0]), 0.f, u32(x.n_rows())};
  run(pipe(kernel::argmax_f32, tune_.wg_rows), {&bx, &bx, &bo}, pc, u32(x.n_rows()), 1, {}, 0, true);
}

void vk_backend::top_k(const tensor& vals, const tensor& ids, const tensor& x, int k) {
  const int64_t V = x.ne[0], R = x.n_rows();
  VKS_ASSERT(k >= 1 && k <= 256 && vals.ne[0] == k && ids.ne[0] == k && vals.n_rows() >= R && ids.n_rows() >= R,
             "top_k: shape mismatch");
  VKS_ASSERT(V <= k_top_k_max_row, "top_k: row too long");
  const bound bx = bind(x, false), bo = bind(vals, true), bi = bind(ids, true);
  const vk::push_topk pc{bx.off, bo.off, bi.off, u32(V), static_cast<uint32_t>(k), u32(R), u32(V)};
  const uint32_t gx = std::min<uint32_t>(u32(R), max_x());
  run(pipe(kernel::top_k_f32, 128), {&bx, &bo, &bi}, pc, gx, cdiv(R, gx));  // topk.comp: fixed 128 invocations
}

void vk_backend::rope(const tensor& x, const tensor& pos, const rope_params& p, const tensor& ff) {
  const int64_t D = x.ne[0], H = x.ne[1], T = x.ne[2] * x.ne[3];
  VKS_ASSERT(p.n_dims > 0 && p.n_dims <= D && p.n_dims % 2 == 0, "rope: bad n_dims");
  const bool has_ff = ff.ne[0] > 0;
  const bound bx = bind(x, true), bp = bind(pos, false);
  const bound bf = has_ff ? bind(ff, false) : bp;
  const uint32_t pl = pipe(kernel::rope_f32, tune_.wg_elem);
  for_row_chunks(T, [&](int64_t t0, int64_t tn) {
    const vk::push_rope pc{bx.off + u32(t0 * H * D * 4), bp.off + u32(t0 * 4), bf.off, u32(D), u32(H), u32(tn),
                           static_cast<uint32_t>(p.n_dims), p.mode == rope_mode::neox ? 1u : 0u, p.freq_base,
                           p.freq_scale, has_ff ? 1u : 0u, p.ext_factor, p.corr_low, p.corr_high, p.mscale};
    run(pl, {&bx, &bp, &bf}, pc, cdiv(H * p.n_dims / 2, tune_.wg_elem), u32(tn), {}, t0 == 0 ? 0 : 1, true);
  });
}

void vk_backend::kv_store(const tensor& kc, const tensor& vc, const tensor& k, const tensor& v, const tensor& slots) {
  const int64_t W = k.ne[0], T = k.n_rows();
  VKS_ASSERT(kc.ne[0] == W && vc.ne[0] == W && kc.type == vc.type, "kv_store: shape mismatch");
  const bool f16 = kc.type == dtype::f16, q8 = kc.type == dtype::q8_0;
  VKS_ASSERT(!f16 || W % 2 == 0, "kv_store: f16 cache rows must have an even width");
  VKS_ASSERT(!q8 || W % 32 == 0, "kv_store: q8_0 cache rows must be whole blocks of 32");
  const bound bk = bind(k, false), bv = bind(v, false), bs = bind(slots, false);
  const uint64_t rb = row_bytes(kc.type, u32(W));
  const uint64_t moved = k.nbytes() + v.nbytes() + slots.nbytes() + 2 * static_cast<uint64_t>(T) * rb;
  const kernel kk = q8 ? kernel::kv_store_q8_0_f32 : f16 ? kernel::kv_store_f16_f32 : kernel::kv_store_f32_f32;
  const uint32_t pl = pipe(kk, tune_.wg_elem);
  // Cache rows [s_lo, s_lo + s_n) bound as bkc/bvc (the whole cache, or one window of a pool
  // over one binding: kv_partition.hpp); each token's row is written by the dispatch whose
  // window holds its slot.
  const auto store = [&](const bound& bkc, const bound& bvc, uint32_t s_lo, uint32_t s_n, uint64_t mv) {
    for_row_chunks(T, [&](int64_t t0, int64_t tn) {
      const vk::push_kv_store pc{bk.off + u32(t0 * W * 4), bv.off + u32(t0 * W * 4), bkc.off, bvc.off,
                                 bs.off + u32(t0 * 4), u32(W), u32(tn), s_lo, s_n};
      run(pl, {&bk, &bv, &bs, &bkc, &bvc}, pc, cdiv(q8 ? W / 32 : f16 ? W / 2 : W, tune_.wg_elem), u32(tn), {},
          t0 == 0 ? mv : 1, true);
    });
  };
  if (!over_range(kc) && !over_range(vc)) {
    store(bind(kc, true), bind(vc, true), 0, UINT32_MAX, moved);
    return;
  }
  const kv_windows w = kv_windows_of(u32(kc.n_rows()), rb, 1, binding_room());
  if (w.n == 0) return fail_step("vulkan: one KV cache row exceeds maxStorageBufferRange");
  for (uint32_t i = 0; i < w.n; ++i) {
    const uint64_t lo = i * w.rows_per_window, n = std::min<uint64_t>(w.rows_per_window, kc.n_rows() - lo);
    store(bind(kc, true, lo * rb, n * rb), bind(vc, true, lo * rb, n * rb), u32(lo), u32(n), i == 0 ? moved : 1);
  }
}

void vk_backend::attention(const tensor& out, const tensor& q, const tensor& kc, const tensor& vc, const tensor& bt,
                           const tensor& seq, const tensor& pos, const attention_params& p) {
  const int64_t T = q.n_rows();
  VKS_ASSERT(p.n_head > 0 && p.n_kv_head > 0 && p.n_head % p.n_kv_head == 0, "attention: bad head counts");
  VKS_ASSERT(p.head_dim > 0, "attention: head_dim must be positive");
  if (p.head_dim > 512) return fail_step("vulkan: attention head_dim " + std::to_string(p.head_dim) + " > 512");
  const bool f16 = kc.type == dtype::f16, q8 = kc.type == dtype::q8_0;
  VKS_ASSERT(!q8 || p.head_dim % 32 == 0, "attention: a q8_0 cache needs head_dim % 32 == 0");
  const bool sink = p.sinks.ne[0] > 0;
  VKS_ASSERT(!sink || (p.sinks.ne[0] == p.n_head && p.sinks.type == dtype::f32), "attention: sinks must be {H} f32");
  // Bytes moved (step_stats): q, out and the tables, and of the caches (bound whole) only the
  // rows the block table can reach: maxb * B positions per sequence, K and V, once per pass
  // over them: these kernels give each query head (texel: each gi heads of a GQA group) and
  // each query token its own walk over its sequence's keys, so a KV row is read group / gi
  // times per query token (the bytes-moved model of tools/bench-gpu counts that as traffic).
  const uint64_t cache_row = row_bytes(kc.type, static_cast<uint64_t>(p.n_kv_head) * static_cast<uint64_t>(p.head_dim));
  const uint64_t kv_reach = 2 * cache_row * static_cast<uint64_t>(bt.n_elements()) * static_cast<uint64_t>(p.block_size);
  const uint64_t per_seq_tokens = std::max<uint64_t>(1, static_cast<uint64_t>(T) / std::max<uint64_t>(1, bt.n_rows()));
  const auto moved_with = [&](uint64_t heads_per_pass) {
    const uint64_t passes = static_cast<uint64_t>(p.n_head / p.n_kv_head) / heads_per_pass * per_seq_tokens;
    return q.nbytes() + out.nbytes() + bt.nbytes() + seq.nbytes() + pos.nbytes() + kv_reach * std::max<uint64_t>(1, passes);
  };
  const uint64_t moved = moved_with(1);
  // A pool over one binding (kv_partition.hpp): flash attention window by window, on every
  // tuning (the other kernels bind the caches whole).
  if (over_range(kc) || over_range(vc)) {
    if (!attention_flash(out, q, kc, vc, bt, seq, pos, p, sink ? &p.sinks : nullptr,
                         moved_with(p.n_head / p.n_kv_head), true))
      fail_step("vulkan: attention over a KV pool larger than maxStorageBufferRange needs attention_flash, which "
                "does not fit this device's shared memory at head_dim " + std::to_string(p.head_dim));
    return;
  }
  const bound bq = bind(q, false), bk = bind(kc, false), bv = bind(vc, false), bb = bind(bt, false),
              bs = bind(seq, false), bp = bind(pos, false), bo = bind(out, true),
              bsk = sink ? bind(p.sinks, false) : bq;  // without sinks the binding is never read
  const vk::push_attention pc{bq.off, bk.off, bv.off, bb.off, bs.off, bp.off, bo.off,
                              static_cast<uint32_t>(p.n_head), static_cast<uint32_t>(p.n_kv_head),
                              static_cast<uint32_t>(p.head_dim), static_cast<uint32_t>(p.block_size),
                              static_cast<uint32_t>(p.max_blocks_per_seq), u32(T), p.scale,
                              static_cast<uint32_t>(std::max(0, p.window)), p.softcap, bsk.off, sink ? 1u : 0u};
  if (tune_.texel && !q8 && p.head_dim % 8 == 0 && p.head_dim <= 128) {  // texel variant (CPU devices)
    const auto tq = bind_texel(q, 16, 0, q.nbytes()), tk = bind_texel(kc, 16, 0, kc.nbytes()),
               tv = bind_texel(vc, 16, 0, vc.nbytes());
    if (tq && tk && tv && bo.off % 16 == 0) {
      vk::push_attention tp = pc;
      tp.q_off = tq->off;
      tp.k_off = tk->off;
      tp.v_off = tv->off;
      const kernel k = f16 ? kernel::attention_texel_f16_f32 : kernel::attention_texel_f32_f32;
      // GI query heads per invocation share each fetched K/V row: the largest divisor of the
      // GQA group size up to 4 (more multiplies the registers spilled per invocation).
      const int64_t group = p.n_head / p.n_kv_head;
      uint32_t gi = 1;
      for (uint32_t d = 4; d > 1; --d)
        if (group % d == 0) {
          gi = d;
          break;
        }
      run(pipe(k, tune_.wg_attn, 1, static_cast<uint32_t>(p.head_dim / 4), gi), {&bb, &bs, &bp, &bo, &bsk}, tp,
          cdiv(int64_t{p.n_head} / gi * T, tune_.wg_attn), 1,
          {{k_storage_bindings, &*tk}, {k_storage_bindings + 1, &*tq}, {k_storage_bindings + 2, &*tv}}, moved_with(gi));
      return;
    }
  }
  if (attention_flash(out, q, kc, vc, bt, seq, pos, p, sink ? &p.sinks : nullptr, moved_with(p.n_head / p.n_kv_head))) return;
  const uint32_t kv_align = q8 ? 2 : f16 ? 8 : 16;
  const bool serial = tune_.serial_attention && p.head_dim % 4 == 0 && p.head_dim <= 128 && bq.off % 16 == 0 &&
                      bo.off % 16 == 0 && bk.off % kv_align == 0 && bv.off % kv_align == 0;
  const kernel k = q8    ? (serial ? kernel::attention_q8_0_f32_serial : kernel::attention_q8_0_f32)
                   : serial ? (f16 ? kernel::attention_f16_f32_serial : kernel::attention_f32_f32_serial)
                            : (f16 ? kernel::attention_f16_f32 : kernel::attention_f32_f32);
  if (serial) {
    run(pipe(k, tune_.wg_attn), {&bq, &bk, &bv, &bb, &bs, &bp, &bo, &bsk}, pc, cdiv(int64_t{p.n_head} * T, tune_.wg_attn), 1, {},
        moved);
  } else {
    const uint32_t wg = std::max<uint32_t>({tune_.wg_attn, 32, std::bit_ceil(cdiv(p.head_dim, 8))});  // D <= 8 wg
    run(pipe(k, wg), {&bq, &bk, &bv, &bb, &bs, &bp, &bo, &bsk}, pc, static_cast<uint32_t>(p.n_head), u32(T), {}, moved);
  }
}

// Flash attention (GPU tunings; attention_flash.comp, attention_merge.comp). A workgroup
// serves R <= 16 query rows (GC heads of one KV head x NQ tokens), R * D <= 1024, against K/V
// tiles of BK keys (flash_shape.hpp); decode (T <= 8) takes one token per workgroup and splits each token's context
// into nsplit parts until the grid has ~attn_wg_target workgroups (>= 64 keys per part),
// merged by a second dispatch. split: the caches exceed one binding (kv_partition.hpp): one
// pass per window of whole blocks, each writing its own nsplit partials, all merged at once
// (tokens in chunks when the partials outgrow their buffer); any tuning. false: not
// applicable here (the caller's kernels run).
bool vk_backend::attention_flash(const tensor& out, const tensor& q, const tensor& kc, const tensor& vc,
                                 const tensor& bt, const tensor& seq, const tensor& pos, const attention_params& p,
                                 const tensor* sinks, uint64_t moved, bool split) {
  if (!tune_.flash_attention && !split) return false;
  const uint32_t wg = std::max<uint32_t>(tune_.wg_attn, 32), D = u32(p.head_dim), G = u32(p.n_head / p.n_kv_head);
  const uint32_t T = u32(q.n_rows()), H = u32(p.n_head);
  const flash_shape fs = pick_flash_shape(D, G, T, ctx_->caps().shared_memory);  // flash_shape.hpp
  if (fs.rows == 0) return false;
  const uint32_t gc = fs.gc, nq = fs.nq, groups = u32(p.n_kv_head) * (G / gc) * cdiv(T, nq);
  // Keys a token can see: the block table's reach, or the window (plus the tile's spread).
  uint64_t ctx = uint64_t(p.max_blocks_per_seq) * uint64_t(p.block_size);
  if (p.window > 0) ctx = std::min<uint64_t>(ctx, uint64_t(p.window) + nq);
  uint32_t nsplit = 1;
  if (groups < tune_.attn_wg_target) nsplit = std::min({cdiv(tune_.attn_wg_target, groups), cdiv(ctx, 64), 64u});
  const uint64_t rb = row_bytes(kc.type, uint64_t{D} * u32(p.n_kv_head)), B = u32(p.block_size);
  kv_windows win{kc.n_rows() > 0 ? static_cast<uint64_t>(kc.n_rows()) : 1, 1};
  if (split) {
    win = kv_windows_of(static_cast<uint64_t>(kc.n_rows()), rb, B, binding_room());
    if (win.n == 0) {
      fail_step("vulkan: one KV cache block (" + std::to_string(B) + " rows of " + std::to_string(rb) +
                " bytes) exceeds maxStorageBufferRange; use a smaller block size");
      return true;
    }
  }
  // Partials: tok_bytes per token and part; T tokens at once, or chunks of tc when a split
  // pool's windows outgrow the buffer (an unsplit one lowers nsplit instead, as it always did).
  const uint64_t tok_bytes = uint64_t{4} * (D + 2) * H;
  constexpr uint64_t k_parts_bytes = uint64_t{16} << 20;
  if (tok_bytes * win.n > k_parts_bytes) {
    fail_step("vulkan: a KV pool in " + std::to_string(win.n) + " binding windows needs more attention partials "
              "than their 16 MiB buffer holds for one token");
    return true;
  }
  nsplit = std::max<uint64_t>(1, std::min<uint64_t>(nsplit, k_parts_bytes / (tok_bytes * win.n * (win.n > 1 ? 1 : T))));
  uint32_t ztot = nsplit * win.n;
  if (ztot > 1 && !attn_parts_.handle()) {
    auto b = raw_buffer::create(*ctx_, k_parts_bytes, false);
    if (b) attn_parts_ = std::move(*b);
    else if (win.n > 1) {
      fail_step("vulkan: no memory for the attention partials of a split KV pool");
      return true;
    } else nsplit = ztot = 1;
  }
  const uint32_t tc = std::min<uint64_t>(T, k_parts_bytes / (tok_bytes * ztot));
  const bool f16 = kc.type == dtype::f16, q8 = kc.type == dtype::q8_0;
  const bound bq = bind(q, false), bb = bind(bt, false), bs = bind(seq, false), bp = bind(pos, false),
              bo = bind(out, true);
  const bound bsk = sinks ? bind(*sinks, false) : dummy_bound();
  vk::push_attention_flash pc{bq.off, 0, 0, bb.off, bs.off, bp.off, 0, H, u32(p.n_kv_head), D, u32(B),
                              u32(p.max_blocks_per_seq), T, p.scale, u32(std::max(0, p.window)), p.softcap, nsplit,
                              bsk.off, sinks ? vk::k_attention_sinks : 0};
  pc.ztot = ztot;
  const kernel k = q8 ? kernel::attention_flash_q8_0_f32 : f16 ? kernel::attention_flash_f16_f32 : kernel::attention_flash_f32_f32;
  // The flash pipeline's spec constants (pipe's wg, lanes, rows, xb, tb slots): WG, GC, D, NQ, BK.
  const uint32_t pf = pipe(k, wg, gc, D, nq, fs.keys);
  if (ztot == 1) {
    const bound bk = bind(kc, false), bv = bind(vc, false);
    pc.k_off = bk.off;
    pc.v_off = bv.off;
    pc.o_off = bo.off;
    run(pf, {&bq, &bk, &bv, &bb, &bs, &bp, &bo, &bsk}, pc, u32(p.n_kv_head) * (G / gc), cdiv(T, nq), {}, moved, false,
        1);
    return true;
  }
  bound parts;
  parts.b = {attn_parts_.handle(), 0, attn_parts_.size()};
  for (uint32_t t0 = 0; t0 < T; t0 += tc) {
    const uint32_t tn = std::min(tc, T - t0);
    vk::push_attention_flash c = pc;
    c.q_off += t0 * H * D * 4;
    c.seq_off += t0 * 4;
    c.pos_off += t0 * 4;
    c.T = tn;
    parts.acc = {attn_parts_.handle(), 0, tok_bytes * ztot * tn, true};
    for (uint32_t i = 0; i < win.n; ++i) {  // window i: cache rows [lo, lo + n), blocks from lo / B
      const uint64_t lo = i * win.rows_per_window, n = std::min<uint64_t>(win.rows_per_window, kc.n_rows() - lo);
      const bound bk = split ? bind(kc, false, lo * rb, n * rb) : bind(kc, false),
                  bv = split ? bind(vc, false, lo * rb, n * rb) : bind(vc, false);
      c.k_off = bk.off;
      c.v_off = bv.off;
      c.blk_lo = split ? u32(lo / B) : 0;
      c.blk_n = split ? u32(n / B) : UINT32_MAX;
      c.z0 = i * nsplit;
      run(pf, {&bq, &bk, &bv, &bb, &bs, &bp, &parts, &bsk}, c, u32(p.n_kv_head) * (G / gc), cdiv(tn, nq), {},
          t0 == 0 && i == 0 ? moved + tok_bytes * ztot * T : 1, false, nsplit);
    }
    parts.acc.write = false;
    c.nsplit = ztot;  // the merge's parts per (token, head)
    c.k_off = 0;
    c.o_off = bo.off + t0 * H * D * 4;
    run(pipe(kernel::attention_merge_f32, std::min<uint32_t>(wg, 128), 1, D), {&parts, &bo, &bsk}, c, H, tn, {},
        t0 == 0 ? tok_bytes * ztot * T + out.nbytes() : 1);
  }
  return true;
}
}  // namespace vk

result<void> check_vk_tuning(std::string_view t) { return vk::check_tuning(t); }

namespace {
// The pipeline cache file for this device under vk_options::pipeline_cache_dir ("" when off
// or when no directory can be made).
std::string pipeline_cache_file(const vk_options& opts, const vk::context& ctx) {
  std::string dir = opts.pipeline_cache_dir;
  if (dir == "off") return {};
  if (dir.empty()) {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    if (xdg && *xdg) dir = std::string(xdg) + "/vkserve";
    else if (home && *home) dir = std::string(home) + "/.cache/vkserve";
    else return {};
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    log::warn("pipeline cache directory {}: {}; pipelines are not persisted", dir, ec.message());
    return {};
  }
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(ctx.physical(), &p);
  char name[64];
  std::snprintf(name, sizeof name, "/pipelines-%04x-%04x.bin", p.vendorID, p.deviceID);
  return dir + name;
}
}  // namespace

result<std::unique_ptr<backend>> make_vk_backend(const vk_options& opts) {
  VKS_TRY(check_vk_tuning(opts.tuning));
  auto ctx = vk::context::create(opts);
  if (!ctx) return fail(std::move(ctx).error());
  const std::string cache_file = pipeline_cache_file(opts, **ctx);
  auto b = std::make_unique<vk::vk_backend>(std::move(*ctx), opts.profile);
  VKS_TRY(b->init(opts.tuning, cache_file));
  b->max_groups_x_ = opts.max_groups_x;
  b->max_groups_y_ = opts.max_groups_y;
  if (opts.max_binding_bytes > 0) b->lower_max_binding(opts.max_binding_bytes);
  if (opts.delta_chunk >= 0) b->set_delta_chunk(uint32_t(opts.delta_chunk));
  return std::unique_ptr<backend>(std::move(b));
}

}  // namespace vks::gpu
