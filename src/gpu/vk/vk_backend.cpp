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
#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "gpu/backend.hpp"
#include "gpu/fault.hpp"
#include "gpu/iq_grids.hpp"
#include "gpu/quant.hpp"
#include "gpu/vk/context.hpp"
#include "gpu/vk/kv_partition.hpp"
#include "gpu/vk/memory.hpp"
#include "gpu/vk/pipelines.hpp"
#include "gpu/vk/push.hpp"
#include "gpu/vk/recorder.hpp"
#include "gpu/vk/spirv_registry.hpp"
#include "gpu/vk/tuning.hpp"

namespace vks::gpu {
namespace vk {
namespace {

uint32_t cdiv(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

// The planar q8_0 layout (CPU devices with texel matmuls): the quants of N rows x K as N*K
// int8 (row n at n*K: whole 16-byte texels), then the scales as f32 in block-major order,
// block b of row n at b*Np + n with Np = N rounded up to 16 (padding 0), so the scales of
// 8 consecutive rows for one block are two 16-byte texels. Same information as GGUF's 34-byte
// blocks; upload() converts to it, download() back.
constexpr int64_t k_planar_row_pad = 16; // Np multiple; matmul_texel.comp's R must divide it
int64_t planar_np(int64_t N) { return (N + k_planar_row_pad - 1) / k_planar_row_pad * k_planar_row_pad; }
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

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

// The kernels of one weight type, resolved by name once at init for the chosen tuning
// (nullopt: the type has no such kernel). matvec/matmul: matmul.comp (the _red variants when
// the tuning reduces lanes per row); texel ones: matmul_texel.comp (CPU devices).
struct weight_kernels {
  std::optional<kernel> matvec, matmul, matvec_texel, matmul_texel, get_rows, matvec_id, gemm;
  std::optional<kernel> matvec_q8;  // matvec_q8_1.comp (tuning's act): integer-dot types only
  std::optional<kernel> gemm_id, gemm_id_bn32;  // gemm.comp MUL_MAT_ID: the gathered expert GEMM (64- and 32-row tiles)
};
constexpr size_t k_n_dtypes = static_cast<size_t>(dtype::i32) + 1;

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
kernel need(std::optional<kernel> k) {
  VKS_ASSERT(k.has_value(), "no kernel for this weight type");
  return *k;
}

// A tensor bound for one dispatch: its descriptor binding and its byte offset inside it.
struct bound {
  binding b;
  uint32_t off = 0;
  access acc;
};

class vk_backend final : public backend {
 public:
  explicit vk_backend(std::unique_ptr<context> ctx, bool profile)
      : ctx_(std::move(ctx)), mem_(*ctx_), pipes_(*ctx_), rec_(*ctx_, pipes_, profile) {}
  ~vk_backend() override = default;

  result<void> init(const std::string& force_tuning, const std::string& cache_file) {
    VKS_TRY(pipes_.init(cache_file));
    VKS_TRY(rec_.init());
    auto d = raw_buffer::create(*ctx_, 256, false);
    if (!d) return fail(std::move(d).error());
    dummy_ = std::move(*d);
    VKS_TRY(init_iq_grids());
    const auto& c = ctx_->caps();
    tune_ = pick_tuning(c, force_tuning);
    wk_ = resolve_weight_kernels(tune_.lanes > 1, tune_.sg_reduce);
    resolve_q8_kernels(wk_, tune_.act, tune_.sg_reduce);
    info_ = {c.name, c.kind, c.device_local_bytes, c.subgroup_size,
             c.max_storage_range > c.min_storage_align + 64 ? c.max_storage_range - c.min_storage_align - 64 : 0,
             c.max_alloc > 4 * k_alloc_pad ? c.max_alloc - 4 * k_alloc_pad : 0};
    info_.q8_1_activations = tune_.act != act_quant::off;
    return ok();
  }

  const device_info& info() const override { return info_; }

  result<tensor> alloc(dtype type, std::array<int64_t, 4> ne, std::string_view name) override {
    for (auto n : ne)
      if (n < 0) return fail(errc::invalid_argument, "alloc " + std::string(name) + ": negative dimension");
    if (ne[0] % traits(type).block_elems != 0)
      return fail(errc::invalid_argument, "alloc " + std::string(name) + ": ne0 not a multiple of the block size");
    tensor t;
    t.type = type;
    t.ne = ne;
    // Planar q8_0 (texel kernels) for matrices only: stacked expert tensors {K, N, E} stay in
    // GGUF blocks (matvec_id reads them), and so do the KV caches (model/kv_cache names them
    // k_cache.* / v_cache.*), which the attention kernels read (common/kv_q8.glsl), with 4
    // spare bytes: the word after a q8_0 cache's last block may be touched.
    const bool cache = name.starts_with("k_cache") || name.starts_with("v_cache");
    const bool planar = tune_.texel && type == dtype::q8_0 && !cache && ne[2] == 1 && ne[3] == 1 &&
                        planar_q8_0_bytes(ne[0], t.n_rows()) + ctx_->caps().min_storage_align + 64 <= ctx_->caps().max_storage_range;
    auto id = mem_.alloc(planar ? planar_q8_0_bytes(ne[0], t.n_rows()) : t.nbytes() + (cache && type == dtype::q8_0 ? 4 : 0),
                         name);
    if (!id) return fail(std::move(id).error());
    t.buf = *id;
    if (planar_.size() <= *id) planar_.resize(*id + 1);
    planar_[*id] = planar;
    return t;
  }

  result<void> upload(const tensor& dst, std::span<const std::byte> src, uint64_t at) override {
    if (!mem_.has(dst.buf)) return fail(errc::invalid_argument, "upload: unknown buffer");
    const auto& a = mem_.at(dst.buf);
    if (at + src.size() > dst.nbytes() || dst.offset + at + src.size() > a.size)
      return fail(errc::invalid_argument, "upload: out of the tensor's bounds");
    if (src.empty()) return ok();
    if (is_planar(dst)) {  // whole tensor only: converted to the planar layout on the host
      if (at != 0 || src.size() != dst.nbytes() || !whole(dst))
        return fail(errc::invalid_argument, "upload: a q8_0 weight tensor is uploaded whole, in one call");
      std::vector<std::byte> planar(planar_q8_0_bytes(dst.ne[0], dst.n_rows()));
      to_planar_q8_0(src, planar.data(), dst.ne[0], dst.n_rows());
      return upload_raw(a, a.base, planar);
    }
    return upload_raw(a, a.base + dst.offset + at, src);
  }

  result<void> upload_raw(const allocation& a, uint64_t abs, std::span<const std::byte> src) {
    if (!in_step_) rec_.count_upload(src.size());  // the recorder counts in-step copies itself
    if (in_step_) {
      rec_.copy(a.buf, abs, src);
      return ok();
    }
    if (a.mapped) {
      std::memcpy(a.mapped + abs, src.data(), src.size());
      return ok();
    }
    for (uint64_t done = 0; done < src.size();) {
      VKS_TRY(ensure_staging());
      const uint64_t n = std::min<uint64_t>(src.size() - done, staging_.size());
      std::memcpy(staging_.mapped(), src.data() + done, n);
      VKS_TRY(rec_.copy_now(staging_.handle(), 0, a.buf, abs + done, n));
      done += n;
    }
    return ok();
  }

  result<void> download(const tensor& src, std::span<std::byte> dst) override {
    if (in_step_) return fail(errc::internal, "download inside a step");
    if (!mem_.has(src.buf)) return fail(errc::invalid_argument, "download: unknown buffer");
    const auto& a = mem_.at(src.buf);
    if (is_planar(src)) {  // back to GGUF blocks
      if (!whole(src)) return fail(errc::invalid_argument, "download: a q8_0 weight tensor is downloaded whole");
      std::vector<std::byte> planar(planar_q8_0_bytes(src.ne[0], src.n_rows()));
      VKS_TRY(download_raw(a, a.base, planar));
      from_planar_q8_0(planar.data(), dst, src.ne[0], src.n_rows());
      return ok();
    }
    const uint64_t n = std::min<uint64_t>(dst.size(), src.nbytes());
    if (src.offset + n > a.size) return fail(errc::invalid_argument, "download: out of the buffer's bounds");
    return download_raw(a, a.base + src.offset, dst.first(n));
  }

  result<void> copy(const tensor& dst, const tensor& src) override {  // on the device (backend.hpp)
    if (in_step_ || is_planar(dst) || is_planar(src) || !mem_.has(dst.buf) || !mem_.has(src.buf) ||
        dst.nbytes() != src.nbytes())
      return backend::copy(dst, src);
    const auto &a = mem_.at(src.buf), &b = mem_.at(dst.buf);
    if (src.offset + src.nbytes() > a.size || dst.offset + dst.nbytes() > b.size)
      return fail(errc::invalid_argument, "copy: out of the buffer's bounds");
    return rec_.copy_now(a.buf, a.base + src.offset, b.buf, b.base + dst.offset, src.nbytes());
  }

  result<void> download_raw(const allocation& a, uint64_t abs, std::span<std::byte> dst) {
    const uint64_t n = dst.size();
    rec_.count_download(n);
    if (a.mapped) {
      std::memcpy(dst.data(), a.mapped + abs, n);
      return ok();
    }
    for (uint64_t done = 0; done < n;) {
      VKS_TRY(ensure_staging());
      const uint64_t c = std::min<uint64_t>(n - done, staging_.size());
      VKS_TRY(rec_.copy_now(a.buf, abs + done, staging_.handle(), 0, c));
      std::memcpy(dst.data() + done, staging_.mapped(), c);
      done += c;
    }
    return ok();
  }

  void begin_step() override {
    VKS_ASSERT(!launched_, "begin_step while a launched step was not waited for");
    rec_.drop_parked();
    parked_reads_.clear();
    patching_ = false;
    rec_.begin();
    in_step_ = true;
  }

  result<void> submit() override {
    VKS_TRY(submit_launch());
    return submit_wait();
  }

  // Overlapped recording (backend.hpp; the recorder's launch / park / resume).
  bool can_park() const override { return true; }
  void begin_parked_step() override {
    VKS_ASSERT(launched_ && !in_step_, "begin_parked_step without a launched step");
    rec_.begin_aside();
    reads_.clear();
    in_step_ = true;
  }
  void end_parked_step() override {
    in_step_ = false;
    rec_.park();
    parked_reads_ = std::move(reads_);
    reads_.clear();
    if (step_error_) {  // a device limit met while recording it: the step is recorded again when due
      rec_.drop_parked();
      parked_reads_.clear();
      step_error_.reset();
    }
  }
  bool resume_parked_step() override {
    VKS_ASSERT(!launched_ && !in_step_, "resume_parked_step inside a step");
    if (!rec_.resume()) return false;
    reads_ = std::move(parked_reads_);
    parked_reads_.clear();
    patch_read_ = 0;
    patching_ = in_step_ = true;
    return true;
  }

  result<void> submit_launch() override {
    in_step_ = false;
    const bool patched = std::exchange(patching_, false);
    if (lost_) return fail(errc::device_lost, "the device was lost");
    if (step_error_) {  // a device limit met while recording: nothing of the step runs
      rec_.begin();
      reads_.clear();
      auto e = std::move(*step_error_);
      step_error_.reset();
      return fail(std::move(e));
    }
    if (patched && (!rec_.patch_complete() || patch_read_ != reads_.size())) {
      rec_.begin();
      reads_.clear();
      return fail(errc::internal, "vulkan: a resumed step's uploads or read-backs differ from its parked recording");
    }
    if (auto f = fault::before_submit(); !f) {  // test hook (gpu/fault.hpp)
      lost_ = true;
      reads_.clear();
      return f;
    }
    auto r = rec_.launch();
    lost_ = !r && r.error().code == errc::device_lost;  // Vulkan: the device stays lost
    flight_reads_ = std::move(reads_);
    reads_.clear();
    if (!r) {
      flight_reads_.clear();
      return r;
    }
    launched_ = true;
    return ok();
  }

  result<void> submit_wait() override {
    if (!std::exchange(launched_, false)) return ok();
    auto r = rec_.wait();
    lost_ = !r && r.error().code == errc::device_lost;
    if (r)
      for (const auto& rd : flight_reads_) std::memcpy(rd.dst.data(), rec_.readback() + rd.at, rd.dst.size());
    flight_reads_.clear();
    return r;
  }

  void download_after(const tensor& src, std::span<std::byte> dst) override {
    VKS_ASSERT(in_step_, "download_after outside a step");
    VKS_ASSERT(mem_.has(src.buf) && !is_planar(src), "download_after: unknown or planar tensor");
    const auto& a = mem_.at(src.buf);
    const uint64_t n = std::min<uint64_t>(dst.size(), src.nbytes());
    VKS_ASSERT(src.offset + n <= a.size, "download_after: out of the buffer's bounds");
    if (n == 0) return;
    const uint64_t at = rec_.read_back(a.buf, a.base + src.offset, n);
    if (patching_) {  // the parked step's next read-back (the recorder checked its source): a new target
      if (patch_read_ < reads_.size() && reads_[patch_read_].at == at && reads_[patch_read_].dst.size() == n)
        reads_[patch_read_].dst = dst.first(n);
      else
        patch_read_ = reads_.size() + 1;  // never complete: submit_launch fails the step
      ++patch_read_;
      return;
    }
    reads_.push_back({at, dst.first(n)});
  }

  step_stats last_step_stats() const override { return rec_.stats(); }

  void get_rows(const tensor& out, const tensor& table, const tensor& idx) override;
  void matmul(const tensor& y, const tensor& w, const tensor& x) override;
  void matmul_split(std::span<const tensor> ys, const tensor& w, const tensor& x, const tensor& bias) override;
  void matmul_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& scratch) override;
  void norm_matmul_split(std::span<const tensor> ys, const tensor& w, const tensor& x, const tensor& norm_w, float eps,
                         const tensor& bias, const tensor& h) override;
  void norm_matmul_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& norm_w, float eps,
                          const tensor& h, const tensor& scratch) override;
  void matmul_add(const tensor& y, const tensor& w, const tensor& x, const tensor& scratch) override;
  // The norm prologue needs matmul.comp's lane-reduction build (GPU tunings) and a
  // power-of-two workgroup (its tree reduction).
  bool fuses_norm_into_matmul() const override {
    return tune_.lanes > 1 && std::has_single_bit(tune_.wg_matmul) && tune_.wg_matmul >= 8;
  }
  void rope_kv_store(const tensor& q, const tensor& k, const tensor& v, const tensor& kc, const tensor& vc,
                     const tensor& pos, const tensor& slots, int head_dim, const rope_params& p, const tensor& ff,
                     const tensor& q_norm, const tensor& k_norm, float eps) override;
  void add(const tensor& y, const tensor& a, const tensor& b) override;
  void rms_norm(const tensor& y, const tensor& x, const tensor& w, float eps) override;
  void add_rms_norm(const tensor& x, const tensor& b, const tensor& y, const tensor& w, float eps) override;
  void rope(const tensor& x, const tensor& pos, const rope_params& p, const tensor& ff) override;
  void silu_mul(const tensor& y, const tensor& gate, const tensor& up) override;
  void ssm_conv(const tensor& y, const tensor& x, const tensor& w, const tensor& state, const tensor& seq_info) override;
  void delta_net(const tensor& out, const tensor& qkv, const tensor& beta_raw, const tensor& alpha_raw,
                 const tensor& dt_bias, const tensor& a, const tensor& state, const tensor& seq_info,
                 const delta_net_params& p) override;
  uint32_t delta_chunk_of(int64_t S) const;
  void sigmoid_mul(const tensor& y, const tensor& gate, const tensor& x) override;
  void gelu_mul(const tensor& y, const tensor& gate, const tensor& up) override;
  void scale(const tensor& y, const tensor& x, float s, float softcap) override;
  void softmax(const tensor& y, const tensor& x) override;
  void kv_store(const tensor& kc, const tensor& vc, const tensor& k, const tensor& v, const tensor& slots) override;
  void attention(const tensor& out, const tensor& q, const tensor& kc, const tensor& vc, const tensor& bt,
                 const tensor& seq, const tensor& pos, const attention_params& p) override;
  void argmax(const tensor& out, const tensor& x) override;
  void top_k(const tensor& vals, const tensor& ids, const tensor& x, int k) override;
  void moe_route(const tensor& ids, const tensor& weights, const tensor& logits, const moe_route_params& p) override;
  void matmul_id(const tensor& y, const tensor& w, const tensor& x, const tensor& ids) override;
  void matmul_id_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& ids) override;
  void moe_combine(const tensor& y, const tensor& x, const tensor& weights) override;
  void add_id(const tensor& y, const tensor& x, const tensor& b, const tensor& ids) override;
  void swiglu_oai(const tensor& y, const tensor& x, float alpha, float limit) override;

 private:
  void matmul_id_bias(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, const tensor& b) override;
  void matmul_id_swiglu_oai(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, const tensor& b, float alpha,
                            float limit, const tensor& scratch) override;
  struct expert_epilogue {  // the optional output stage of expert_matmul: per-expert bias, clamped SwiGLU
    const tensor* bias = nullptr;
    bool oai = false;
    float alpha = 0.f, limit = 0.f;
  };
  void expert_matmul(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, bool swiglu,
                     const expert_epilogue& ep);
  bool expert_gemm(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, bool swiglu, uint64_t per_window);
  bool attention_flash(const tensor& out, const tensor& q, const tensor& kc, const tensor& vc, const tensor& bt,
                       const tensor& seq, const tensor& pos, const attention_params& p, const tensor* sinks,
                       uint64_t moved, bool split = false);
  struct pending_read {
    uint64_t at;                // offset in the recorder's read-back buffer
    std::span<std::byte> dst;
  };
  std::vector<pending_read> reads_;  // this step's download_after targets
  std::vector<pending_read> flight_reads_, parked_reads_;  // the launched step's; the parked one's
  bool launched_ = false;  // submit_launch() returned ok, submit_wait() not called yet
  bool patching_ = false;  // a resumed parked step (backend.hpp)
  size_t patch_read_ = 0;  // its download_after calls so far
  bool is_planar(const tensor& t) const { return t.buf < planar_.size() && planar_[t.buf]; }
  // t covers its whole allocation (a planar tensor is only ever used whole).
  bool whole(const tensor& t) const {
    return t.offset == 0 && t.type == dtype::q8_0 && planar_q8_0_bytes(t.ne[0], t.n_rows()) == mem_.at(t.buf).size;
  }

  // The i-quant grids (gpu/iq_grids.hpp shader_words), uploaded once; read-only after, so
  // the recorder never tracks them. run() binds them at k_iq_grid_binding.
  result<void> init_iq_grids() {
    const auto words = iq::shader_grid_words();
    const auto bytes = std::as_bytes(std::span<const uint32_t>(words));
    auto g = raw_buffer::create(*ctx_, bytes.size() + k_alloc_pad, false);
    if (!g) return fail(std::move(g).error());
    iq_grids_ = std::move(*g);
    allocation a;
    a.buf = iq_grids_.handle();
    a.size = a.buf_size = iq_grids_.size();
    a.mapped = iq_grids_.mapped();
    return upload_raw(a, 0, bytes);
  }

  result<void> ensure_staging() {
    if (staging_.handle()) return ok();
    auto rb = raw_buffer::create(*ctx_, uint64_t{64} << 20, true);
    if (!rb) return fail(std::move(rb).error());
    staging_ = std::move(*rb);
    return ok();
  }

  // Binds bytes [lo, lo + n) of tensor t (relative to t's start). Whole-buffer binding when
  // the buffer fits maxStorageBufferRange, else a window starting at an aligned offset.
  bound bind(const tensor& t, bool write, uint64_t lo = 0, uint64_t n = UINT64_MAX) const {
    const auto& a = mem_.at(t.buf);
    if (n == UINT64_MAX) n = t.nbytes() - lo;
    const uint64_t abs = a.base + t.offset + lo;
    VKS_ASSERT(t.offset + lo + n <= a.size, "tensor view exceeds its allocation");
    bound r;
    r.acc = {a.buf, abs, abs + n, write};
    const auto& c = ctx_->caps();
    if (a.buf_size <= c.max_storage_range) {
      r.b = {a.buf, 0, a.buf_size};
      r.off = static_cast<uint32_t>(abs);
    } else {
      const uint64_t start = abs / c.min_storage_align * c.min_storage_align;
      const uint64_t range = std::min<uint64_t>(a.buf_size - start, c.max_storage_range);
      VKS_ASSERT(abs + n + 4 <= start + range, "binding exceeds maxStorageBufferRange (split the op)");
      r.b = {a.buf, start, range};
      r.off = static_cast<uint32_t>(abs - start);
    }
    return r;
  }

  // Binds bytes [lo, lo + n) of t (relative to t's start) to a texel binding whose texels are
  // texel_bytes wide; r.off is then the texel index of byte lo. One view per buffer serves
  // every tensor in it when the buffer fits maxTexelBufferElements, else a window. nullopt
  // when the start is not texel-aligned or the range does not fit one view.
  std::optional<bound> bind_texel(const tensor& t, uint64_t texel_bytes, uint64_t lo, uint64_t n) const {
    const auto& a = mem_.at(t.buf);
    const auto& c = ctx_->caps();
    const uint64_t abs = a.base + t.offset + lo, max_range = c.max_texel_elements * texel_bytes;
    if (abs % texel_bytes != 0) return std::nullopt;
    uint64_t start = 0;
    if (a.buf_size > max_range) {
      start = abs / c.min_texel_align * c.min_texel_align;
      if ((abs - start) % texel_bytes != 0) return std::nullopt;
    }
    const uint64_t range = std::min(a.buf_size - start, max_range) / texel_bytes * texel_bytes;
    if (abs + n > start + range || (abs - start) / texel_bytes > UINT32_MAX) return std::nullopt;
    bound r;
    r.b = {a.buf, start, range};
    r.off = static_cast<uint32_t>((abs - start) / texel_bytes);
    r.acc = {a.buf, abs, abs + n, false};
    return r;
  }

  // A matmul's output mode (push.hpp matmul_out): split outputs y2/y3 and bias, or SwiGLU.
  struct mm_mode {
    const tensor* y2 = nullptr;
    const tensor* y3 = nullptr;
    const tensor* bias = nullptr;
    int64_t n1 = 0, n2 = 0;  // split: rows of y and y2; SwiGLU: F
    bool swiglu = false;
    const tensor* norm = nullptr;  // norm prologue: x read as rms_norm(x) * *norm (matmul.comp)
    float eps = 0.f;
    bool accumulate = false;       // y += result (matmul.comp)
  };
  // mode_of(ys, bias): the split mode matmul_split uses.
  static mm_mode split_mode(std::span<const tensor> ys, const tensor& bias);
  bool matmul_any(const tensor& y, const tensor& w, const tensor& x, const mm_mode& m);
  bool matmul_texel(const tensor& y, const tensor& w, const tensor& x, const mm_mode& m);
  bool matmul_q8_1(const tensor& y, const tensor& w, const tensor& x, const mm_mode& m);
  std::optional<bound> quantize_q8_1(const tensor& x, const mm_mode& m);
  vk::matmul_out mm_bind(const mm_mode& m, int64_t n_rows, bound& b2, bound& b3, bound& bb) const;
  bound dummy_bound() const {
    bound b;
    b.b = {dummy_.handle(), 0, dummy_.size()};
    b.acc = {dummy_.handle(), 0, 0, false};
    return b;
  }
  bool elementwise_texel(kernel k, const tensor& y, const tensor& a, const tensor& b);
  const weight_kernels& kernels_of(dtype t) const { return wk_[static_cast<size_t>(t)]; }

  // The pipeline of k for this specialization; on failure the step's error (submit()
  // returns it, one line) and k_no_pipeline, which run() skips.
  uint32_t pipe(kernel k, uint32_t wg, uint32_t lanes = 1, uint32_t rows = 1, uint32_t xb = 0, uint32_t tb = 0,
                uint32_t sg_size = 0) {
    auto p = pipes_.get(k, {wg, lanes, rows, xb, tb, sg_size});
    if (p) return *p;
    if (!step_error_) step_error_ = p.error();
    return k_no_pipeline;
  }
  static constexpr uint32_t k_no_pipeline = UINT32_MAX;
  std::optional<vks::error> step_error_;  // first device limit or pipeline failure of this step

 public:
  uint32_t max_groups_x_ = 0;  // vk_options::max_groups_x (0: the device's limit)
  // maxComputeWorkGroupCount[0], or the test hook's lower value: the elementwise kernels and
  // top_k spill their groups over it into y.
  uint32_t max_x() const {
    const uint32_t d = ctx_->caps().max_wg_count[0];
    return max_groups_x_ > 0 ? std::min(d, max_groups_x_) : d;
  }
  void lower_max_binding(uint64_t n) { info_.max_binding_bytes = std::min(info_.max_binding_bytes, n); }
  // Bytes one storage binding may span after the alignment slack bind() needs.
  uint64_t binding_room() const { return ctx_->caps().max_storage_range - ctx_->caps().min_storage_align - 64; }
  // t's buffer is larger than one binding: bind() gives windows (a KV pool: kv_partition.hpp).
  bool over_range(const tensor& t) const { return mem_.at(t.buf).buf_size > ctx_->caps().max_storage_range; }
  // Fails the step with one line (the first such error of the step wins).
  void fail_step(std::string msg) {
    if (!step_error_) step_error_ = make_error(errc::unsupported, std::move(msg));
  }
  void set_delta_chunk(uint32_t c) { tune_.delta_chunk = c; }  // vk_options::delta_chunk
  uint32_t max_groups_y_ = 0;  // vk_options::max_groups_y (0: the device's limit)
  uint32_t max_y() const {
    const uint32_t d = ctx_->caps().max_wg_count[1];
    return max_groups_y_ > 0 ? std::min(d, max_groups_y_) : d;
  }
  // Calls f(r0, n) for rows [0, rows) in chunks of at most maxComputeWorkGroupCount[1], for
  // the kernels whose grid has one row of y per token or gathered row.
  template <class F>
  void for_row_chunks(int64_t rows, F&& f) const {
    const int64_t c = max_y();
    for (int64_t r0 = 0; r0 < rows; r0 += c) f(r0, std::min(c, rows - r0));
  }

 private:

  // Binds bs to bindings 0, 1, ... in order; texels (binding, bound) to texel bindings.
  // fold_x: the kernel reads its x tile as x + z * groups in x and ignores tiles past its
  // rows (matmul_out.glsl's mm_tile), so a grid wider than the device allows in x is folded
  // into z; other kernels' over-wide grids fail the step with one line.
  template <class Push>
  void run(uint32_t pipeline, std::initializer_list<const bound*> bs, const Push& push, uint32_t gx, uint32_t gy = 1,
           std::initializer_list<std::pair<uint32_t, const bound*>> texels = {}, uint64_t moved = 0,
           bool fold_x = false, uint32_t gz = 1) {
    binding_set set;
    set.fill({dummy_.handle(), 0, dummy_.size()});
    set[k_iq_grid_binding] = {iq_grids_.handle(), 0, iq_grids_.size()};  // unless bs uses it
    access acc[k_bindings];
    uint32_t i = 0;
    for (const bound* b : bs) {
      set[i] = b->b;
      acc[i] = b->acc;
      ++i;
    }
    for (auto [slot, b] : texels) {
      VKS_ASSERT(slot >= k_storage_bindings && slot < k_bindings, "not a texel binding");
      set[slot] = b->b;
      acc[i++] = b->acc;
    }
    if (pipeline == k_no_pipeline) return;
    const auto& caps_lim = ctx_->caps().max_wg_count;
    const uint32_t lim[3] = {max_groups_x_ > 0 ? std::min(caps_lim[0], max_groups_x_) : caps_lim[0], max_y(),
                             caps_lim[2]};
    if (fold_x && gx > lim[0]) {
      gz = cdiv(gx, lim[0]);
      gx = cdiv(gx, gz);  // gx * gz covers the tiles with under gz spare ones
    }
    if (gx > lim[0] || gy > lim[1] || gz > lim[2]) {  // a shape this device cannot dispatch: the step fails, the process lives
      if (!step_error_)
        step_error_ = make_error(errc::unsupported, "vulkan: a " + std::string(pipes_.name(pipeline)) + " dispatch of " +
                                                        std::to_string(gx) + " x " + std::to_string(gy) +
                                                        " workgroups exceeds this device's maxComputeWorkGroupCount (" +
                                                        std::to_string(lim[0]) + " x " + std::to_string(lim[1]) + ")");
      return;
    }
    rec_.dispatch(pipeline, set, {acc, i}, &push, sizeof(Push), gx, gy, gz, moved);
  }

  std::unique_ptr<context> ctx_;
  allocator mem_;
  raw_buffer dummy_, staging_;  // before pipes_: its texel views of dummy_ are destroyed first
  raw_buffer iq_grids_;         // the i-quant grids (init_iq_grids)
  raw_buffer attn_parts_;       // flash decoding's partials (attention_flash), made at first use
  raw_buffer moe_route_;        // moe_gather.comp's route table (expert_gemm), made at first use
  pipelines pipes_;
  recorder rec_;
  std::vector<bool> planar_;    // by buffer id: q8_0 stored in the planar layout
  tuning tune_;
  std::array<weight_kernels, k_n_dtypes> wk_;  // by dtype, for tune_
  // q8_1 activations (quantize_q8_1): the largest is current; smaller ones stay alive, as a
  // step recorded before a growth may still bind them.
  std::vector<tensor> act_q8_;
  device_info info_;
  bool in_step_ = false;
  bool lost_ = false;  // a submit returned device_lost: every later one does
};

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
  // rope_kv.comp stages a head row of at most 256 in shared memory, by pairs, and applies the
  // plain rotation only: YaRN's ramp and magnitude go through the composition (rope.comp).
  // A pool over one binding (kv_partition.hpp): kv_store writes it window by window, and
  // this kernel would rope q once per window.
  if (D % 2 != 0 || D > 256 || p.ext_factor != 0.f || p.mscale != 1.f || over_range(kc) || over_range(vc)) {
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

// ---- mixture of experts: storage-buffer kernels under every tuning -----------------------
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
  // The gathered GEMM has no per-expert bias or clamped-SwiGLU stage yet (gpt-oss keeps the
  // expert matvec for its prefill).
  if (!ep.bias && !ep.oai && expert_gemm(y, w, x, ids, swiglu, static_cast<uint64_t>(per_window))) return;
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
                             uint64_t per_window) {
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
  const vk::matmul_out o = mm_bind(m, N, b2, b3, bb);
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
                                0, rows_at, x_div, static_cast<uint32_t>(e_bytes), u32(e0), u32(en)};
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
  VKS_ASSERT(p.head_dim > 0 && p.head_dim <= 256, "attention: head_dim must be in 1..256");
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
    const uint32_t wg = std::max<uint32_t>(tune_.wg_attn, 32);
    VKS_ASSERT(static_cast<uint32_t>(p.head_dim) <= 8 * wg, "attention: head_dim too large");
    run(pipe(k, wg), {&bq, &bk, &bv, &bb, &bs, &bp, &bo, &bsk}, pc, static_cast<uint32_t>(p.n_head), u32(T), {}, moved);
  }
}

// Flash attention (GPU tunings; attention_flash.comp, attention_merge.comp). A workgroup
// serves R <= 16 query rows (GC heads of one KV head x NQ tokens), R * D <= 1024 (its q and
// accumulators in shared memory); decode (T <= 8) takes one token per workgroup and splits each token's context
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
  const uint32_t rmax = std::min<uint32_t>(16, 1024 / D);
  const uint64_t shared_bytes = 4 * (2 * uint64_t{rmax} * D + 16 * (D + 1) + rmax * 16 + 6 * rmax + 16);
  if (rmax == 0 || shared_bytes > ctx_->caps().shared_memory) return false;
  uint32_t gc = 1;
  for (uint32_t d = std::min(G, rmax); d > 1; --d)
    if (G % d == 0) {
      gc = d;
      break;
    }
  const uint32_t nq = T <= 8 ? 1 : rmax / gc, groups = u32(p.n_kv_head) * (G / gc) * cdiv(T, nq);
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
  // The flash pipeline's spec constants (pipe's wg, lanes, rows, xb slots): WG, GC, D, NQ.
  const uint32_t pf = pipe(k, wg, gc, D, nq);
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
}  // namespace
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
