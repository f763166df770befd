// gpu/vk: vk_backend's mixture-of-experts ops (backend_impl.hpp declares them): the router
// (moe_route.comp), the experts' grouped matmul (matmul.comp MUL_MAT_ID for a few tokens, the
// gathered GEMM of moe_gather.comp + gemm.comp MUL_MAT_ID for prefill on GPU tunings), the
// weighted combine, per-expert biases and gpt-oss's clamped SwiGLU. Storage-buffer kernels
// under every tuning.
#include "gpu/vk/backend_impl.hpp"

namespace vks::gpu::vk {

void vk_backend::moe_route(const tensor& ids, const tensor& weights, const tensor& logits, const moe_route_params& p) {
  const int64_t E = logits.ne[0], T = logits.n_rows();
  VKS_ASSERT(p.k >= 1 && p.k <= k_moe_max_used && p.k <= E && E <= k_moe_max_experts && ids.ne[0] == p.k &&
                 weights.ne[0] == p.k && ids.n_rows() >= T && weights.n_rows() >= T,
             "moe_route: shape mismatch");
  const bound bx = bind(logits, false), bi = bind(ids, true), bw = bind(weights, true);
  const uint32_t flags = (p.norm ? vk::k_route_norm : 0) | (p.gating == moe_gating::softmax_selected ? vk::k_route_softmax_selected : 0);
  const vk::push_moe_route pc{bx.off, bi.off, bw.off, u32(E), static_cast<uint32_t>(p.k), u32(T), flags, p.scale};
  const uint32_t groups = cdiv(T, tune_.wg_elem), gx = std::min<uint32_t>(groups, 65535);
  run(pipe(kernel::moe_route_f32, tune_.wg_elem), {&bx, &bi, &bw}, pc, gx, cdiv(groups, gx));
}

void vk_backend::matmul_id(const tensor& y, const tensor& w, const tensor& x, const tensor& ids) {
  expert_matmul(y, w, x, ids, false, expert_epilogue{});
}

void vk_backend::matmul_id_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& ids) {
  expert_matmul(y, w, x, ids, true, expert_epilogue{});
}

// gpt-oss's expert biases (and its clamped SwiGLU) in matmul.comp's output stage: the bias
// {N, E} is bound whole at binding 5, each row adding its expert's column.
void vk_backend::matmul_id_bias(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, const tensor& b) {
  VKS_ASSERT(b.ne[0] == w.ne[1] && b.n_rows() == w.ne[2] && b.type == dtype::f32, "matmul_id_bias: bias shape mismatch");
  expert_matmul(y, w, x, ids, false, {&b});
}

void vk_backend::matmul_id_swiglu_oai(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, const tensor& b,
                                      float alpha, float limit, const tensor&) {
  VKS_ASSERT(b.ne[0] == w.ne[1] && b.n_rows() == w.ne[2] && b.type == dtype::f32, "matmul_id_swiglu_oai: bias shape mismatch");
  expert_matmul(y, w, x, ids, true, {&b, true, alpha, limit});
}

// matvec_id: one dispatch for every (token, slot) row; each row's workgroups read only its
// expert's matrix. SwiGLU is matmul.comp's output mode over the expert's [gate; up] rows.
void vk_backend::expert_matmul(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, bool swiglu,
                               const expert_epilogue& ep) {
  const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2], k = ids.ne[0], R = y.n_rows();
  const int64_t F = swiglu ? N / 2 : N, T = R / std::max<int64_t>(k, 1);
  VKS_ASSERT(k >= 1 && x.ne[0] == K && y.ne[0] == F && R == k * ids.n_rows() && (x.n_rows() == T || x.n_rows() == R) &&
                 (!swiglu || N % 2 == 0) && y.type == dtype::f32 && x.type == dtype::f32,
             "matmul_id: shape mismatch");
  VKS_ASSERT(!is_planar(w), "matmul_id: expert weights are never planar");
  if (R == 0) return;
  const kernel kn = need(kernels_of(w.type).matvec_id);
  const uint32_t rows = tune_.lanes > 1 ? 1 : tune_.rows_vec;
  const uint32_t rows_per_wg = tune_.wg_matmul / tune_.lanes * rows;
  if (swiglu && (rows_per_wg % 2 != 0 || (tune_.lanes == 1 && rows % 2 != 0))) {
    if (!step_error_) step_error_ = make_error(errc::unsupported, "matmul_id_swiglu: this tuning's tile does not pair gate and up rows");
    return;
  }
  const uint64_t rb = row_bytes(w.type, u32(K)), e_bytes = rb * static_cast<uint64_t>(N);
  // Experts per binding window: all of them when the stack fits one binding, else one
  // dispatch per window of whole experts, each skipping the rows of the others (a few
  // dispatches for the largest models, never one per expert).
  const uint64_t room = ctx_->caps().max_storage_range - ctx_->caps().min_storage_align - 64;
  if (e_bytes > room) {
    if (!step_error_)
      step_error_ = make_error(errc::unsupported, "matmul_id: one expert matrix of " + std::to_string(e_bytes) +
                                                      " bytes exceeds one storage binding of this device");
    return;
  }
  const int64_t per_window = static_cast<int64_t>(std::min<uint64_t>(room / e_bytes, static_cast<uint64_t>(E)));
  if (expert_gemm(y, w, x, ids, swiglu, ep, static_cast<uint64_t>(per_window))) return;
  const uint32_t p = pipe(kn, tune_.wg_matmul, tune_.lanes, rows, 0, 0, tune_.lanes > 1 ? tune_.sg_size : 0);
  const bound bx = bind(x, false), by = bind(y, true), bi = bind(ids, false);
  bound b2, b3, bb;
  mm_mode m;
  m.swiglu = swiglu;
  m.n1 = swiglu ? F : 0;
  m.bias = ep.bias;
  vk::matmul_out o = mm_bind(m, N, b2, b3, bb);
  if (ep.oai) o.flags |= vk::k_mm_swiglu_oai;
  const uint32_t gx = swiglu ? cdiv(F, rows_per_wg / 2) : cdiv(N, rows_per_wg);
  // Rows in chunks of whole tokens within the device's grid height (a long prefill with k = 8).
  const uint32_t x_div = x.n_rows() == R ? 1u : u32(k);
  const int64_t chunk = std::max<int64_t>(k, ctx_->caps().max_wg_count[1] / k * k);
  for (int64_t e0 = 0; e0 < E; e0 += per_window) {
    const int64_t en = std::min<int64_t>(per_window, E - e0);
    const bound bw = bind(w, false, static_cast<uint64_t>(e0) * e_bytes, static_cast<uint64_t>(en) * e_bytes);
    for (int64_t r0 = 0; r0 < R; r0 += chunk) {
      const int64_t rn = std::min<int64_t>(chunk, R - r0);
      const vk::push_matmul_id pc{{bw.off, bx.off + u32(r0 / x_div * K * 4), by.off + u32(r0 * F * 4), u32(K), u32(N), u32(rn),
                                   static_cast<uint32_t>(rb), u32(F), o},
                                  bi.off + u32(r0 * 4), x_div, static_cast<uint32_t>(e_bytes), u32(E), u32(e0), u32(en),
                                  ep.alpha, ep.limit};
      // Bytes moved: the selected experts' matrices (at most one per row), x and y.
      const uint64_t moved = std::min<uint64_t>(u32(rn), u32(en)) * e_bytes + x.nbytes() + y.nbytes() + ids.nbytes();
      run(p, {&bw, &bx, &by, &b2, &b3, &bb, &bi}, pc, gx, u32(rn), {}, moved);
    }
  }
}

// The gathered expert GEMM (GPU tunings, more than 8 tokens): per chunk of whole tokens, one
// moe_gather dispatch builds the route table (rows per expert, in tiles of <= 64 or <= 32) on
// the device, then one gemm_id dispatch per binding window of experts multiplies each tile's
// rows by its expert, reading each weight tile once per tile of gathered rows. false, recording
// nothing, where it does not apply (the caller runs the expert matvec).
bool vk_backend::expert_gemm(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, bool swiglu,
                             const expert_epilogue& ep, uint64_t per_window) {
  const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2], k = ids.ne[0], R = y.n_rows();
  const int64_t F = swiglu ? N / 2 : N, T = R / k;
  if (!tune_.gemm || T <= 8 || !kernels_of(w.type).gemm_id || !kernels_of(w.type).gemm_id_bn32 || E > k_moe_max_experts)
    return false;
  // Tiles of 32 rows where the experts average at most 32 rows each (a 64-row tile would
  // read each weight tile just as often and compute half its FMAs for nothing), else 64.
  const int64_t tile = R <= 32 * E ? 32 : 64;
  // The table: n_tiles, 2 words per tile (capacity ceil(rows / tile) + min(E, rows)), the rows.
  const uint64_t route_bytes = std::min<uint64_t>(uint64_t{4} << 20, ctx_->caps().max_storage_range);
  auto tiles_cap = [&](int64_t rows) { return (rows + tile - 1) / tile + std::min(E, rows); };
  auto words = [&](int64_t rows) { return static_cast<uint64_t>(1 + 2 * tiles_cap(rows) + rows); };
  int64_t chunk = R;  // whole tokens whose table fits the buffer and whose tiles one grid column holds
  auto fits = [&](int64_t rows) { return words(rows) * 4 <= route_bytes && tiles_cap(rows) <= int64_t{max_y()}; };
  while (chunk > k && !fits(chunk)) chunk = std::max(k, chunk / 2 / k * k);
  if (!fits(chunk)) return false;
  if (!moe_route_.handle()) {
    auto b = raw_buffer::create(*ctx_, uint64_t{4} << 20, false);
    if (!b) return false;
    moe_route_ = std::move(*b);
  }
  const uint64_t rb = row_bytes(w.type, u32(K)), e_bytes = rb * static_cast<uint64_t>(N);
  const uint32_t pg = pipe(kernel::moe_gather, 256);
  const uint32_t pm = pipe(tile == 32 ? *kernels_of(w.type).gemm_id_bn32 : *kernels_of(w.type).gemm_id, u32(4 * tile));
  const bound bx = bind(x, false), by = bind(y, true), bi = bind(ids, false);
  bound b2, b3, bb, route;
  mm_mode m;
  m.swiglu = swiglu;
  m.n1 = swiglu ? F : 0;
  m.bias = ep.bias;
  vk::matmul_out o = mm_bind(m, N, b2, b3, bb);
  if (ep.oai) o.flags |= vk::k_mm_swiglu_oai;
  const uint32_t x_div = x.n_rows() == R ? 1u : u32(k);
  for (int64_t r0 = 0; r0 < R; r0 += chunk) {
    const int64_t rn = std::min(chunk, R - r0);
    const uint32_t rows_at = u32(1 + 2 * tiles_cap(rn));
    route.b = {moe_route_.handle(), 0, route_bytes};
    route.acc = {moe_route_.handle(), 0, words(rn) * 4, true};
    const vk::push_moe_gather pg_c{bi.off + u32(r0 * 4), 0, u32(rn), u32(E), rows_at, u32(tile)};
    run(pg, {&bi, &route}, pg_c, 1, 1, {}, static_cast<uint64_t>(rn) * 4 + words(rn) * 4);
    route.acc.write = false;
    for (int64_t e0 = 0; e0 < E; e0 += static_cast<int64_t>(per_window)) {
      const int64_t en = std::min<int64_t>(static_cast<int64_t>(per_window), E - e0);
      const bound bw = bind(w, false, static_cast<uint64_t>(e0) * e_bytes, static_cast<uint64_t>(en) * e_bytes);
      const vk::push_gemm_id pc{{bw.off, bx.off + u32(r0 / x_div * K * 4), by.off + u32(r0 * F * 4), u32(K), u32(N),
                                 u32(rn), static_cast<uint32_t>(rb), u32(F), o},
                                0, rows_at, x_div, static_cast<uint32_t>(e_bytes), u32(e0), u32(en), ep.alpha, ep.limit};
      // Bytes moved: the selected experts' matrices (each at least once), x and y.
      const uint64_t moved = std::min<uint64_t>(u32(rn), u32(en)) * e_bytes + x.nbytes() + y.nbytes() + words(rn) * 4;
      run(pm, {&bw, &bx, &by, &b2, &b3, &bb, &route}, pc, swiglu ? cdiv(F, 32) : cdiv(N, 64), u32(tiles_cap(rn)), {},
          moved, true);
    }
  }
  return true;
}

void vk_backend::moe_combine(const tensor& y, const tensor& x, const tensor& weights) {
  const int64_t C = y.ne[0], T = y.n_rows(), k = weights.ne[0];
  VKS_ASSERT(x.ne[0] == C && x.n_rows() == k * T && weights.n_rows() >= T, "moe_combine: shape mismatch");
  const bound bx = bind(x, false), bw = bind(weights, false), byy = bind(y, true);
  const vk::push_moe_combine pc{bx.off, bw.off, byy.off, u32(C), u32(k), u32(C * T)};
  const uint32_t groups = cdiv(C * T, tune_.wg_elem), gx = std::min<uint32_t>(groups, 65535);
  run(pipe(kernel::moe_combine_f32, tune_.wg_elem), {&bx, &bw, &byy}, pc, gx, cdiv(groups, gx));
}

void vk_backend::add_id(const tensor& y, const tensor& x, const tensor& b, const tensor& ids) {
  const int64_t N = x.ne[0], R = x.n_rows(), E = b.n_rows();
  VKS_ASSERT(y.ne[0] == N && y.n_rows() == R && b.ne[0] == N && ids.n_elements() == R && E >= 1, "add_id: shape mismatch");
  if (R == 0) return;
  const bound bx = bind(x, false), bb = bind(b, false), bi = bind(ids, false), byy = bind(y, true);
  const vk::push_add_id pc{bx.off, bb.off, bi.off, byy.off, u32(N), u32(E), u32(N * R), 0.f, 0.f};
  const uint32_t groups = cdiv(N * R, tune_.wg_elem), gx = std::min<uint32_t>(groups, 65535);
  run(pipe(kernel::add_id_f32, tune_.wg_elem), {&bx, &bb, &bi, &byy}, pc, gx, cdiv(groups, gx));
}

void vk_backend::swiglu_oai(const tensor& y, const tensor& x, float alpha, float limit) {
  const int64_t F = y.ne[0], R = y.n_rows();
  VKS_ASSERT(x.ne[0] == 2 * F && x.n_rows() == R, "swiglu_oai: shape mismatch");
  if (R == 0) return;
  const bound bx = bind(x, false), byy = bind(y, true);
  const vk::push_add_id pc{bx.off, 0, 0, byy.off, u32(F), 1, u32(F * R), alpha, limit};
  const uint32_t groups = cdiv(F * R, tune_.wg_elem), gx = std::min<uint32_t>(groups, 65535);
  run(pipe(kernel::swiglu_oai_f32, tune_.wg_elem), {&bx, &bx, &bx, &byy}, pc, gx, cdiv(groups, gx));
}

}  // namespace vks::gpu::vk
