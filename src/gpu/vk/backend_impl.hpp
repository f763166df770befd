// gpu/vk internal: the declaration of vk_backend (the Vulkan gpu::backend) and the helpers its
// member files share. vk_backend.cpp holds the backend's core (memory, matmuls, elementwise and
// attention ops) and make_vk_backend; vk_moe.cpp its mixture-of-experts ops. Nothing outside
// src/gpu/vk includes this header: the rest of the tree sees gpu::backend only.
#pragma once

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

namespace vks::gpu::vk {

inline uint32_t cdiv(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }
inline uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

// The planar q8_0 layout of weight matrices on CPU devices (vk_backend.cpp says how it is laid
// out): its size, and the conversions from and to GGUF's 34-byte blocks.
uint64_t planar_q8_0_bytes(int64_t K, int64_t N);
void to_planar_q8_0(std::span<const std::byte> src, std::byte* dst, int64_t K, int64_t N);
void from_planar_q8_0(const std::byte* src, std::span<std::byte> dst, int64_t K, int64_t N);

// The kernels of one weight type, resolved by name once at init for the chosen tuning
// (nullopt: the type has no such kernel). matvec/matmul: matmul.comp (the _red variants when
// the tuning reduces lanes per row); texel ones: matmul_texel.comp (CPU devices).
struct weight_kernels {
  std::optional<kernel> matvec, matmul, matvec_texel, matmul_texel, get_rows, matvec_id, gemm;
  std::optional<kernel> matvec_q8;  // matvec_q8_1.comp (tuning's act): integer-dot types only
  std::optional<kernel> gemm_id, gemm_id_bn32;  // gemm.comp MUL_MAT_ID: the gathered expert GEMM (64- and 32-row tiles)
};
constexpr size_t k_n_dtypes = static_cast<size_t>(dtype::i32) + 1;

// The weight kernels of every type for a tuning (sg: the lane-reducing matmuls reduce by
// subgroupAdd), and matvec_q8_1.comp's builds for the tuning's act (none when off).
std::array<weight_kernels, k_n_dtypes> resolve_weight_kernels(bool red, bool sg);
void resolve_q8_kernels(std::array<weight_kernels, k_n_dtypes>& all, act_quant act, bool sg);

inline kernel need(std::optional<kernel> k) {
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
  bool expert_gemm(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, bool swiglu,
                   const expert_epilogue& ep, uint64_t per_window);
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

}  // namespace vks::gpu::vk
