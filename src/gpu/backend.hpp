// The narrow compute interface the model layer records its forward pass against.
// Two implementations: gpu/vk (Vulkan compute, production) and gpu/ref (plain C++ loops,
// the oracle for tests). Nothing outside gpu/vk sees Vulkan types.
//
// Shapes use ggml order: ne[0] is the fastest-varying (contiguous) dimension, so an
// activation matrix of T rows by C columns has ne = {C, T}. Legend used in comments:
//   T tokens in the step, C model width, N output features, K input features,
//   V vocab, H query heads, Hkv key/value heads, D head dim, S sequences in the step,
//   B block size (tokens per KV block), M rows gathered.
// Tensors are views (buffer + byte offset + shape); reshaping is free. All tensors are
// contiguous. Activations are f32 unless stated.
//
// Execution model: ops are recorded between begin_step() and submit(); submit() runs them
// in order (each op sees the results of earlier ones) and waits for completion. upload()
// inside a step is ordered before the ops recorded after it; download() is only valid
// outside a step; download_after() records a read-back inside the step, so a step and its
// results are one submission and one fence wait. A backend is used from one thread (the
// engine thread).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gpu/dtype.hpp"

namespace vks::gpu {

using buffer_id = uint32_t;

struct tensor {
  buffer_id buf = 0;
  uint64_t offset = 0;                 // bytes from the start of the buffer
  dtype type = dtype::f32;
  std::array<int64_t, 4> ne{1, 1, 1, 1};

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  uint64_t nbytes() const { return row_bytes(type, static_cast<uint64_t>(ne[0])) * static_cast<uint64_t>(n_rows()); }
  // Same bytes, new shape (element count must match).
  tensor view(std::array<int64_t, 4> shape) const;
  // Rows [first, first+count) of a 2-D view {ne0, rows}.
  tensor rows(int64_t first, int64_t count) const;
};

struct device_info {
  std::string name;
  std::string kind;          // "discrete" | "integrated" | "cpu" | "virtual" | "ref"
  uint64_t memory_bytes = 0; // device-local heap size (budget for weights + KV cache)
  uint32_t subgroup_size = 0;
  uint64_t max_binding_bytes = 0; // largest tensor one kernel binding can hold whole (gpu/vk:
                                  // maxStorageBufferRange less alignment slack; 0: no limit)
  uint64_t max_tensor_bytes = 0;  // largest tensor alloc() can make (gpu/vk: maxMemoryAllocationSize;
                                  // 0: no limit). A KV pool layer beyond a binding is bound in windows.
  // Matmuls of T <= 8 columns over the integer-dot weight types quantize x to q8_1 blocks
  // (gpu/vk's tuning `act`; gpu/ref's twin: make_ref_backend_q8_1, gpu/ref/ref_q8_1.hpp).
  bool q8_1_activations = false;
};

enum class rope_mode : uint8_t {
  normal,  // rotate adjacent pairs (x[2i], x[2i+1]): GGUF llama
  neox,    // rotate halves (x[i], x[i+D/2]): HF llama/qwen, GGUF qwen2/qwen3
};

struct rope_params {
  rope_mode mode = rope_mode::normal;
  int n_dims = 0;            // rotated dims per head (<= D; usually D)
  float freq_base = 10000.f;
  float freq_scale = 1.f;    // linear position scaling (1 = none)
  // YaRN (llama.cpp's rope_yarn): pair i mixes the interpolated angle (freq_scale * theta) with
  // the extrapolated one (theta) by ramp(i) * ext_factor, ramp(i) = 1 - clamp((i - corr_low) /
  // max(0.001, corr_high - corr_low), 0, 1); ext_factor 0 = plain interpolation. cos and sin
  // are multiplied by mscale (YaRN's attention magnitude; 1 = none).
  float ext_factor = 0.f;
  float corr_low = 0.f, corr_high = 0.f;
  float mscale = 1.f;
};

struct attention_params {
  int n_head = 0, n_kv_head = 0, head_dim = 0;  // H, Hkv, D (H % Hkv == 0)
  int block_size = 16;                          // B
  int max_blocks_per_seq = 0;                   // columns of the block table
  float scale = 0.f;                            // usually 1/sqrt(D)
  int window = 0;        // > 0: sliding window: token t attends to keys pos[t]-window+1..pos[t]
  float softcap = 0.f;   // > 0: each score (after scale) becomes softcap * tanh(score / softcap)
  // Attention sinks (gpt-oss): sinks {H} f32, one learned logit per query head that joins the
  // softmax's denominator and nothing else: out = sum_j e^(s_j - m) v_j / (sum_j e^(s_j - m) +
  // e^(sink_h - m)), m = max(max_j s_j, sink_h) (unscaled, as ggml's soft_max sinks).
  // ne[0] == 0 (the default): none.
  tensor sinks{0, 0, dtype::f32, {0, 1, 1, 1}};
};

// What the last step cost (gpu/vk counts these in its recorder; gpu/ref reports zeros):
// from begin_step() up to now, i.e. the step's recording, its submit(s) and any download()
// after it. bytes_moved is an estimate of what the step's kernels read and write, summed
// over the byte ranges each dispatch binds (attention: the cache rows its block table can
// reach), so it overcounts a weight or cache range bound but only partly read.
struct step_stats {
  uint64_t dispatches = 0;
  uint64_t barriers = 0;         // pipeline barriers (recorded where a hazard exists)
  uint64_t submits = 0;          // queue submissions (the step's, and staging copies)
  uint64_t fence_waits = 0;      // blocking waits on a fence
  uint64_t bytes_uploaded = 0;   // host -> device bytes (in-step uploads included)
  uint64_t bytes_downloaded = 0; // device -> host bytes
  uint64_t bytes_moved = 0;      // estimated device bytes read + written by the kernels
  // Host time (gpu/vk): recording, from begin_step() to the step's queue submission (the
  // ops, the command-buffer lookup or encode, the staging copy), and blocked on its fence.
  // record_ns is what recording step N+1 during step N could hide at most.
  uint64_t record_ns = 0;
  uint64_t wait_ns = 0;
  // Overlapped recording (#19, backend "Overlapped recording"): 1 when this step's ops were
  // recorded while the step before it ran (record_ns then counts only what was left: the
  // inputs' uploads, the read-back targets and the submission), and that hidden time.
  uint64_t overlapped = 0;
  uint64_t record_hidden_ns = 0;
};

// Mixture-of-experts routing (gpu::backend::moe_route), as each family gates its experts.
enum class moe_gating : uint8_t {
  softmax,           // p = softmax(logits) over all E; the k largest p; weight = p (qwen3moe, mixtral)
  softmax_selected,  // the k largest logits; weight = softmax over those k (gpt-oss)
};
struct moe_route_params {
  int k = 0;                 // experts per token (1 <= k <= k_moe_max_used, k <= E)
  moe_gating gating = moe_gating::softmax;
  bool norm = false;         // weights /= max(sum of the k weights, 2^-14) (llama.cpp's clamp)
  float scale = 0.f;         // weights *= scale unless it is 0 or 1
};
inline constexpr int k_moe_max_used = 16;
inline constexpr int64_t k_moe_max_experts = 1024;

// Gated DeltaNet (linear attention with a recurrent state; qwen35's recurrent layers).
// Shapes: Hk key heads, Hv value heads (Hv % Hk == 0; value head h reads q/k head h % Hk,
// llama.cpp's tiling), S the head width of keys and values; the in-projection's channels
// are qkv = [q (Hk*S); k (Hk*S); v (Hv*S)], Cc = (2 Hk + Hv) S of them.
struct delta_net_params {
  int n_k_heads = 0, n_v_heads = 0;  // Hk, Hv
  int head_dim = 0;                  // S (each value head's state is S x S f32)
  float eps = 1e-6f;                 // q and k are l2-normalised: x / max(||x||, eps)
};
// The recurrent ops' view of a step's sequences: seq_info {8, S} i32, per sequence:
//   [0] t0, [1] n: its tokens are t0..t0+n-1 of the step, in position order;
//   [2] slot: the state column it updates;
//   [3] reset: 1: the state starts from zero (its first token is at position 0);
//   [4] src: 0 reset: the column holding the state after the token before t0 (slot itself,
//       or a checkpoint column the state is restored from);
//   [5] ck_t, [6] ck_slot: ck_t >= 0: after step token ck_t (in t0..t0+n-1) the state is
//       also copied to column ck_slot (a checkpoint); -1: none; [7] unused.
// Every step token belongs to exactly one entry; columns src/ck_slot may not be another
// entry's slot.
inline constexpr int k_seq_info_fields = 8;

inline constexpr int64_t k_top_k_max_row = 262144;  // gpu/vk's top_k bound (its loop budget)

class backend {
 public:
  virtual ~backend() = default;
  virtual const device_info& info() const = 0;

  // ---- memory (outside a step) ----------------------------------------------------------
  // Device tensor of the given type and shape, zero-initialised contents not guaranteed.
  virtual result<tensor> alloc(dtype type, std::array<int64_t, 4> ne, std::string_view name) = 0;
  // Copy host bytes into dst starting at byte offset `at` within dst. A backend may keep q8_0
  // tensors in a layout of its own (gpu/vk on CPU devices: planar): upload such a tensor
  // whole, in one call (at = 0), and use it whole (no rows()/view() of it); download still
  // returns GGUF blocks. Errors: invalid_argument (bounds, a partial upload it cannot take).
  virtual result<void> upload(const tensor& dst, std::span<const std::byte> src, uint64_t at = 0) = 0;
  // Copy src's bytes to the host (outside a step, after submit()).
  virtual result<void> download(const tensor& src, std::span<std::byte> dst) = 0;
  // dst's bytes = src's (as many bytes; not a q8_0 weight tensor), outside a step; they may
  // share a buffer but not overlap (a hybrid's state column or KV block copied for a forked
  // sequence). Default: through host memory; gpu/vk copies on the device.
  virtual result<void> copy(const tensor& dst, const tensor& src) {
    if (dst.nbytes() != src.nbytes()) return fail(errc::invalid_argument, "copy: the tensors differ in size");
    std::vector<std::byte> tmp(src.nbytes());
    VKS_TRY(download(src, tmp));
    return upload(dst, tmp);
  }

  // ---- recording ------------------------------------------------------------------------
  virtual void begin_step() = 0;

  // out[M,C] f32 = table[idx[m], :] dequantised; table {C, R} of any dtype, idx {M} i32.
  virtual void get_rows(const tensor& out, const tensor& table, const tensor& idx) = 0;
  // y[T,N] = x[T,K] . w[N,K]^T ; w {K, N} of any dtype (row n is output feature n), x {K, T}.
  virtual void matmul(const tensor& y, const tensor& w, const tensor& x) = 0;
  // y = a + b; b has a's shape or one row {ne0, 1} broadcast over a's rows.
  virtual void add(const tensor& y, const tensor& a, const tensor& b) = 0;
  // y[r,:] = x[r,:] / sqrt(mean(x[r,:]^2) + eps) * w ; w {ne0} f32.
  virtual void rms_norm(const tensor& y, const tensor& x, const tensor& w, float eps) = 0;
  // The residual add and the next norm: x += b (b has x's shape), then y = rms_norm(x) * w.
  // y must not overlap x or b. This composition is the reference; a backend may fuse it.
  virtual void add_rms_norm(const tensor& x, const tensor& b, const tensor& y, const tensor& w, float eps) {
    add(x, x, b);
    rms_norm(y, x, w, eps);
  }
  // Fused ops. Each default below is the composition of the ops above (the reference the
  // fused kernels are tested against), so a backend needs nothing to support them.
  //
  // Matmuls over one weight whose rows are the outputs' weights stacked (w = [w0; w1; w2], as
  // model/weights concatenates q/k/v): ys[i] {n_i, T} = x . w_i^T, plus bias rows [o_i, o_i +
  // n_i) when bias is not empty (bias {sum n_i} f32; ne[0] == 0: none). 1 to 3 outputs.
  virtual void matmul_split(std::span<const tensor> ys, const tensor& w, const tensor& x, const tensor& bias) {
    int64_t o = 0;
    for (const tensor& y : ys) {
      const int64_t n = y.ne[0];
      matmul(y, w.rows(o, n), x);
      if (bias.ne[0] > 0) add(y, y, bias.view({1, bias.ne[0], 1, 1}).rows(o, n).view({n, 1, 1, 1}));
      o += n;
    }
  }
  // y {F, T} = silu(x . w_gate^T) * (x . w_up^T) with w = [w_gate; w_up] {K, 2F} (rows stacked,
  // as model/weights concatenates ffn_gate and ffn_up). scratch {F, T} f32: room the default
  // may use (a fused kernel leaves it alone). y must not overlap x or scratch.
  virtual void matmul_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& scratch) {
    const int64_t F = w.n_rows() / 2;
    matmul(y, w.rows(0, F), x);
    matmul(scratch, w.rows(F, F), x);
    silu_mul(y, y, scratch);
  }
  // The norm in its consumer: matmul_split / matmul_swiglu of rms_norm(x) * norm_w (norm_w
  // {K} f32, eps as rms_norm), so x (the residual stream) needs no normed copy and the norm
  // no dispatch of its own. h {K, T} f32: room the default may use for the normed x (a fused
  // kernel leaves it alone). ys / y must not overlap x or h.
  virtual void norm_matmul_split(std::span<const tensor> ys, const tensor& w, const tensor& x, const tensor& norm_w,
                                 float eps, const tensor& bias, const tensor& h) {
    rms_norm(h, x, norm_w, eps);
    matmul_split(ys, w, h, bias);
  }
  virtual void norm_matmul_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& norm_w, float eps,
                                  const tensor& h, const tensor& scratch) {
    rms_norm(h, x, norm_w, eps);
    matmul_swiglu(y, w, h, scratch);
  }
  // The residual add in the projection: y += x . w^T (y {N, T}). scratch {N, T} f32: room the
  // default may use. y must not overlap x or scratch.
  virtual void matmul_add(const tensor& y, const tensor& w, const tensor& x, const tensor& scratch) {
    matmul(scratch, w, x);
    add(y, y, scratch);
  }
  // Whether norm_matmul_* and matmul_add are single kernels here (gpu/vk under its GPU
  // tuning), so the layer should use them instead of add_rms_norm (which CPU devices fuse).
  // Only a choice of dispatch counts: both ways compute the same.
  virtual bool fuses_norm_into_matmul() const { return false; }
  // The attention inputs of a step: optionally a per-head RMSNorm of q and k (q_norm, k_norm
  // {D} f32, both or neither: ne[0] == 0 for none; Qwen3), then RoPE of q and k, then k and v
  // into the paged cache (kv_store). q {H*D, T} ends rotated in place; k {Hkv*D, T} is an
  // input only (the default leaves it normed and rotated, a fused kernel may leave it as it
  // was); v {Hkv*D, T}.
  virtual void rope_kv_store(const tensor& q, const tensor& k, const tensor& v, const tensor& k_cache,
                             const tensor& v_cache, const tensor& pos, const tensor& slots, int head_dim,
                             const rope_params& p, const tensor& freq_factors, const tensor& q_norm,
                             const tensor& k_norm, float eps) {
    const int64_t D = head_dim, T = q.n_rows();
    const tensor qh = q.view({D, q.ne[0] / D, T, 1}), kh = k.view({D, k.ne[0] / D, T, 1});
    if (q_norm.ne[0] > 0) {  // rows of D: one per (head, token); in place
      rms_norm(qh.view({D, q.n_elements() / D, 1, 1}), qh.view({D, q.n_elements() / D, 1, 1}), q_norm, eps);
      rms_norm(kh.view({D, k.n_elements() / D, 1, 1}), kh.view({D, k.n_elements() / D, 1, 1}), k_norm, eps);
    }
    rope(qh, pos, p, freq_factors);
    rope(kh, pos, p, freq_factors);
    kv_store(k_cache, v_cache, k, v, slots);
  }
  // In place on x {D, H, T}: rotate by pos[t] (i32 {T}); freq_factors {n_dims/2} f32 divides
  // each frequency (llama3 scaling) or is an empty tensor (ne[0] == 0) for none. YaRN and
  // mscale as rope_params says.
  virtual void rope(const tensor& x, const tensor& pos, const rope_params& p, const tensor& freq_factors) = 0;
  // y = silu(gate) * up, elementwise.
  virtual void silu_mul(const tensor& y, const tensor& gate, const tensor& up) = 0;
  // y = gelu(gate) * up, elementwise; gelu's tanh approximation (ggml_gelu, Gemma's FFN).
  virtual void gelu_mul(const tensor& y, const tensor& gate, const tensor& up) = 0;
  // y = x * s, then softcap * tanh(y / softcap) when softcap > 0; elementwise, y may be x.
  virtual void scale(const tensor& y, const tensor& x, float s, float softcap = 0.f) = 0;
  // Row softmax over ne0.
  virtual void softmax(const tensor& y, const tensor& x) = 0;
  // Paged KV cache write: k, v {Hkv*D, T}; caches {Hkv*D, n_slots} (f32 or f16);
  // slots {T} i32: cache row for each token (block * B + offset).
  virtual void kv_store(const tensor& k_cache, const tensor& v_cache, const tensor& k, const tensor& v,
                        const tensor& slots) = 0;
  // Causal attention over the paged cache for a flattened batch of tokens from several
  // sequences (prefill chunks and decodes alike): token t belongs to sequence seq[t]
  // (i32 {T}) and attends to its keys at positions 0..pos[t] (i32 {T}); key at position p of
  // sequence s lives in cache row block_table[s, p / B] * B + p % B; block_table {maxb, S} i32.
  // q {H*D, T}; out {H*D, T}. GQA: query head h reads kv head h / (H / Hkv). Sliding
  // window and score soft-capping as attention_params says.
  virtual void attention(const tensor& out, const tensor& q, const tensor& k_cache, const tensor& v_cache,
                         const tensor& block_table, const tensor& seq, const tensor& pos,
                         const attention_params& p) = 0;
  // out[t] = argmax over ne0 of x[t,:] (lowest index on ties, NaN skipped; 0 when the row
  // is all NaN); out {T} i32. The engine's greedy choice (engine/sampler argmax) exactly.
  virtual void argmax(const tensor& out, const tensor& x) = 0;
  // The k largest entries of each row of x {V, R} (f32), sorted by value descending, ties
  // by lower index; NaN counts as -inf. vals {k, R} f32 and ids {k, R} i32; rows with fewer
  // than k entries are padded with (-inf, V). 1 <= k <= 256, V <= k_top_k_max_row.
  virtual void top_k(const tensor& vals, const tensor& ids, const tensor& x, int k) = 0;

  // ---- mixture of experts (mul_mat_id-style: only the selected experts' weights are read) ----
  // Router: for each row t of logits {E, T}, the k chosen experts ids {k, T} i32, ordered
  // by score descending (ties by lower id; NaN counts as -inf), and their weights {k, T} f32
  // as p.gating, p.norm and p.scale say.
  virtual void moe_route(const tensor& ids, const tensor& weights, const tensor& logits, const moe_route_params& p) = 0;
  // Grouped matmul over stacked expert matrices w {K, N, E} (expert e: rows [e*N, (e+1)*N)):
  // row r = t*k + s of y {N, k*T} is w_e . x_r with e = ids[s, t] (ids {k, T} i32, each in
  // [0, E)), where x_r = x[t] when x is {K, T} (one input shared by a token's k slots) and
  // x[r] when x is {K, k*T}.
  virtual void matmul_id(const tensor& y, const tensor& w, const tensor& x, const tensor& ids) = 0;
  // The SwiGLU of the selected experts: w {K, 2F, E} stacks each expert's [gate_e; up_e]
  // (model/weights interleaves ffn_gate_exps and ffn_up_exps); row r of y {F, k*T} is
  // silu(gate_e . x_r) * (up_e . x_r), e and x_r as in matmul_id.
  virtual void matmul_id_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& ids) = 0;
  // The weighted sum of a token's expert outputs: y[t] {C} = sum_s weights[s, t] * x[t*k + s]
  // (x {C, k*T}, weights {k, T}, y {C, T}; y must not overlap x), slots added in order.
  virtual void moe_combine(const tensor& y, const tensor& x, const tensor& weights) = 0;
  // Per-expert bias (ggml_add_id): row r of y and x {N, R} (R = k*T rows in (token, slot)
  // order, as matmul_id writes them) gets b's column ids[r]: y[r] = x[r] + b[:, ids[r]], b {N, E}
  // f32, ids {k, T} i32 (each in [0, E)). y may be x.
  virtual void add_id(const tensor& y, const tensor& x, const tensor& b, const tensor& ids) = 0;
  // gpt-oss's clamped SwiGLU (ggml_swiglu_oai) over rows [gate; up] of x {2F, R}: with g =
  // min(gate, limit) and u = clamp(up, -limit, limit), y {F, R} = g * sigmoid(alpha * g) * (u + 1).
  // y must not overlap x.
  virtual void swiglu_oai(const tensor& y, const tensor& x, float alpha, float limit) = 0;
  // Expert matmuls with their per-expert biases in the output stage (gpt-oss). The defaults are
  // the compositions (the reference; gpu/ref needs nothing). matmul_id_bias: matmul_id, then
  // add_id(y, y, b, ids) with b {N, E} f32. matmul_id_swiglu_oai: w {K, 2F, E} stacks each
  // expert's [gate_e; up_e] (as matmul_id_swiglu), b {2F, E} f32 their biases in that order;
  // row r of y {F, k*T} = swiglu_oai(w_e . x_r + b_e, alpha, limit); scratch {2F, k*T} f32 is
  // the composition's intermediate (a fusing backend leaves it untouched).
  virtual void matmul_id_bias(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, const tensor& b) {
    matmul_id(y, w, x, ids);
    add_id(y, y, b, ids);
  }
  virtual void matmul_id_swiglu_oai(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, const tensor& b,
                                    float alpha, float limit, const tensor& scratch) {
    matmul_id(scratch, w, x, ids);
    add_id(scratch, scratch, b, ids);
    swiglu_oai(y, scratch, alpha, limit);
  }

  // ---- recurrent layers (gated DeltaNet) ----------------------------------------------------
  // Causal depthwise conv of width Kc over each sequence's inputs, then silu: for channel c of
  // x {Cc, T}, y[c, t] = silu(sum_{j<Kc} w[c, j] * u[t + j]) where u is the sequence's last
  // Kc-1 inputs before the step (the conv state in column src; zeros on reset) followed by its inputs in
  // the step. w {Kc, Cc} f32; state {(Kc-1)*Cc, n_slots} f32 (column = slot; element j*Cc + c
  // of a column is channel c's input Kc-1-j tokens back, oldest first), updated to the
  // sequence's last Kc-1 inputs.
  // y {Cc, T} must not overlap x.
  virtual void ssm_conv(const tensor& y, const tensor& x, const tensor& w, const tensor& state,
                        const tensor& seq_info) = 0;
  // The gated delta rule, token by token within each sequence (p gives Hk, Hv, S). qkv {Cc, T}
  // (the conv's output); beta_raw, alpha_raw {Hv, T}; dt_bias, a {Hv} f32 (a = -exp(A_log));
  // state {S*S*Hv, n_slots} f32 (value head h: S x S, element (h*S + i)*S + j for key i and
  // value j); out {Hv*S, T}. Per token and value head h (q, k: head h % Hk):
  //   q = q / max(||q||, eps) / sqrt(S); k = k / max(||k||, eps);
  //   g = softplus(alpha_raw + dt_bias[h]) * a[h]; beta = sigmoid(beta_raw)
  //   M = M * exp(g); d[j] = beta * (v[j] - sum_i M[i][j] k[i]); M[i][j] += k[i] d[j];
  //   out[j] = sum_i M[i][j] q[i]
  // (softplus(x) = x above 20, log(1 + exp(x)) below, as ggml.)
  virtual void delta_net(const tensor& out, const tensor& qkv, const tensor& beta_raw, const tensor& alpha_raw,
                         const tensor& dt_bias, const tensor& a, const tensor& state, const tensor& seq_info,
                         const delta_net_params& p) = 0;
  // y = x * sigmoid(gate), elementwise (the output gate of qwen35's attention layers); or,
  // when gate has one element per row of x (gate.n_elements() == x.n_rows() < x.n_elements()),
  // y[:, t] = x[:, t] * sigmoid(gate[t]) (the shared expert's gate of qwen35moe / qwen3next).
  virtual void sigmoid_mul(const tensor& y, const tensor& gate, const tensor& x) = 0;

  // Inside a step: at submit(), once the ops recorded before this call have run, src's bytes
  // (min(dst.size(), src.nbytes())) are copied to dst, in the step's one submission. dst is
  // host memory that must stay valid until submit() returns; it is filled when submit()
  // returns ok. src must not be a backend-layout (planar) tensor.
  virtual void download_after(const tensor& src, std::span<std::byte> dst) = 0;

  // Runs everything recorded since begin_step() and waits. Errors: device_lost, out_of_memory.
  virtual result<void> submit() = 0;

  // Counters of the last step (see step_stats); zeros for a backend that does not count.
  virtual step_stats last_step_stats() const { return {}; }

  // Overlapped recording (#19): a backend that records ops and runs them at submit (gpu/vk)
  // can record step N+1 while step N runs. submit_launch() submits the recorded step and
  // returns; begin_parked_step() .. end_parked_step() then record the next step aside (ops
  // only: nothing runs, its uploads are staged); submit_wait() waits for step N (its
  // download_after targets filled, its counters final). A later resume_parked_step() takes
  // the parked recording up as the current step in patch mode: the caller repeats its
  // upload() calls (same tensors and sizes, in the same order: their bytes replace the parked
  // ones) and its download_after() calls (same sources and sizes, in order: new targets),
  // records no op, and submits. begin_step() drops a parked recording. Only where
  // can_park(); the defaults run the step at submit_launch.
  virtual bool can_park() const { return false; }
  virtual result<void> submit_launch() { return submit(); }
  virtual result<void> submit_wait() { return ok(); }
  virtual void begin_parked_step() {}
  virtual void end_parked_step() {}
  // false: nothing parked (the caller records the step with begin_step()).
  virtual bool resume_parked_step() { return false; }
};

// The plain-loop reference backend (gpu/ref): always available, exact f32 math on the host.
std::unique_ptr<backend> make_ref_backend();

struct vk_options {
  std::string device;          // "" = best (discrete > integrated > cpu); index or name substring
  bool validation = false;     // enable VK_LAYER_KHRONOS_validation when installed
  bool profile = false;        // GPU timestamps per op, logged at shutdown
  // Where compiled pipelines persist across runs: "" = $XDG_CACHE_HOME/vkserve, else
  // ~/.cache/vkserve; "off" = not persisted. A directory that cannot be made is warned
  // about and the cache stays in memory.
  std::string pipeline_cache_dir;
  std::string tuning;          // "" = by device class; "cpu" | "cpu:ssbo" | "cpu:loads" | "gpu" | "gpu:N[:smem]" | a class
                               // name ("nvidia", "amd-rdna", "amd-gcn", "intel", "apple"; gpu/vk/tuning.hpp) force that
                               // kernel/tile selection (tests use it to cover both paths on one device)
  uint32_t max_groups_x = 0;   // tests: > 0 lowers maxComputeWorkGroupCount[0] to this (the matmuls
                               // then fold their grids into z; other over-wide grids fail the step)
  uint32_t max_groups_y = 0;   // tests: > 0 lowers maxComputeWorkGroupCount[1] to this (rope, kv_store,
                               // rope_kv_store and get_rows then run their rows in chunks)
  uint64_t max_binding_bytes = 0;  // tests: > 0 lowers device_info::max_binding_bytes to this
  uint64_t max_storage_range = 0;  // tests/diagnostics: > 0 lowers maxStorageBufferRange to this (at least
                                   // 64 KiB): weights and caches beyond it are then bound in windows
  uint32_t max_shared_memory = 0;  // tests: > 0 lowers maxComputeSharedMemorySize to this (at least 16 KiB,
                                   // Vulkan's minimum): flash attention's tiles shrink (gpu/vk/flash_shape.hpp)
  int delta_chunk = -1;  // benchmarks/tests: >= 0 overrides the tuning's delta_chunk (0: the token-by-token
                         // delta_net kernel always; N: the chunked one with chunks of at most N tokens)
};
// invalid_argument naming the accepted values unless `tuning` is one of vk_options::tuning's.
result<void> check_vk_tuning(std::string_view tuning);
// The Vulkan backend (gpu/vk). errc::unsupported if no Vulkan 1.2 device is present.
result<std::unique_ptr<backend>> make_vk_backend(const vk_options& opts);

}  // namespace vks::gpu
