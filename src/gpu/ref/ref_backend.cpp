// gpu/ref: the plain-loop reference backend, the oracle for every Vulkan kernel. Host
// memory, ops executed eagerly in recording order (equivalent to the interface's
// "submit runs them in order"), dot products and reductions accumulated in double.
// Not fast; meant for tests and tiny models.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/assert.hpp"
#include "gpu/backend.hpp"
#include "gpu/fault.hpp"
#include "gpu/quant.hpp"
#include "gpu/ref/ref_q8_1.hpp"
#include "gpu/ref/ref_recurrent.hpp"

namespace vks::gpu {
namespace {

class ref_backend final : public backend {
 public:
  // q8_1: matmuls of has_q8_1_dot types with T <= 8 quantize x to q8_1 (ref_q8_1.hpp).
  explicit ref_backend(bool q8_1 = false) : q8_1_(q8_1) {
    info_ = {"reference (host loops)", "ref", 0, 1};
    info_.q8_1_activations = q8_1;
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
    t.buf = static_cast<buffer_id>(bufs_.size());
    bufs_.emplace_back(t.nbytes());
    return t;
  }

  result<void> upload(const tensor& dst, std::span<const std::byte> src, uint64_t at) override {
    auto& b = bufs_.at(dst.buf);
    if (at + src.size() > dst.nbytes() || dst.offset + at + src.size() > b.size())
      return fail(errc::invalid_argument, "upload: out of the tensor's bounds");
    if (!src.empty()) std::memcpy(b.data() + dst.offset + at, src.data(), src.size());
    return ok();
  }

  result<void> download(const tensor& src, std::span<std::byte> dst) override {
    auto& b = bufs_.at(src.buf);
    const uint64_t n = std::min<uint64_t>(dst.size(), src.nbytes());
    if (src.offset + n > b.size()) return fail(errc::invalid_argument, "download: out of the buffer's bounds");
    if (n) std::memcpy(dst.data(), b.data() + src.offset, n);
    return ok();
  }

  void begin_step() override {}
  result<void> submit() override {  // the fault test hook (gpu/fault.hpp); then nothing to run
    if (lost_) return fail(errc::device_lost, "the device was lost");
    auto f = fault::before_submit();
    lost_ = !f;
    return f;
  }

  void get_rows(const tensor& out, const tensor& table, const tensor& idx) override {
    const int64_t C = table.ne[0], R = table.n_rows(), M = idx.ne[0];
    const uint64_t rb = row_bytes(table.type, C);
    for (int64_t m = 0; m < M; ++m) {
      const int32_t r = i32(idx)[m];
      VKS_ASSERT(r >= 0 && r < R, "get_rows: index out of range");
      dequantize_row(table.type, bytes(table) + rb * r, f32(out) + m * C, C);
    }
  }

  void matmul(const tensor& y, const tensor& w, const tensor& x) override {
    const int64_t K = w.ne[0], N = w.n_rows(), T = x.n_rows();
    VKS_ASSERT(x.ne[0] == K && y.ne[0] == N, "matmul: shape mismatch");
    std::vector<float> wr(static_cast<size_t>(K));
    const uint64_t rb = row_bytes(w.type, K);
    const float* xs = f32(x);
    float* ys = f32(y);
    std::vector<float> yt(static_cast<size_t>(N * T));
    if (q8_1_ && T <= 8 && has_q8_1_dot(w.type)) {
      std::vector<std::byte> xq(static_cast<size_t>(K / 32 * k_q8_1_block_bytes * T));
      for (int64_t t = 0; t < T; ++t) quantize_row_q8_1(xs + t * K, xq.data() + t * K / 32 * k_q8_1_block_bytes, K);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t t = 0; t < T; ++t)
          yt[t * N + n] = static_cast<float>(vec_dot_q8_1(w.type, bytes(w) + rb * n, xq.data() + t * K / 32 * k_q8_1_block_bytes, K));
      std::memcpy(ys, yt.data(), yt.size() * 4);
      return;
    }
    for (int64_t n = 0; n < N; ++n) {
      dequantize_row(w.type, bytes(w) + rb * n, wr.data(), K);
      for (int64_t t = 0; t < T; ++t) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(wr[k]) * xs[t * K + k];
        yt[t * N + n] = static_cast<float>(acc);
      }
    }
    std::memcpy(ys, yt.data(), yt.size() * 4);  // y may alias x
  }

  void add(const tensor& y, const tensor& a, const tensor& b) override {
    const int64_t n = a.n_elements(), bn = b.n_elements();
    VKS_ASSERT(bn == n || bn == a.ne[0], "add: b must match a or be one row");
    for (int64_t i = 0; i < n; ++i) f32(y)[i] = f32(a)[i] + f32(b)[bn == n ? i : i % a.ne[0]];
  }

  void rms_norm(const tensor& y, const tensor& x, const tensor& w, float eps) override {
    const int64_t C = x.ne[0], R = x.n_rows();
    for (int64_t r = 0; r < R; ++r) {
      const float* xr = f32(x) + r * C;
      double ss = 0;
      for (int64_t i = 0; i < C; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      const auto s = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(C) + eps));
      float* yr = f32(y) + r * C;
      for (int64_t i = 0; i < C; ++i) yr[i] = xr[i] * s * f32(w)[i];
    }
  }

  void rope(const tensor& x, const tensor& pos, const rope_params& p, const tensor& ff) override {
    const int64_t D = x.ne[0], H = x.ne[1], T = x.ne[2] * x.ne[3];
    const int half = p.n_dims / 2;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) {
        float* v = f32(x) + (t * H + h) * D;
        for (int i = 0; i < half; ++i) {
          double theta_ex = static_cast<double>(i32(pos)[t]) * std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_dims);
          if (ff.ne[0] > 0) theta_ex /= f32(ff)[i];
          double theta = p.freq_scale * theta_ex;
          if (p.ext_factor != 0.f) {
            const double y = (i - p.corr_low) / std::max(0.001, static_cast<double>(p.corr_high - p.corr_low));
            const double mix = (1.0 - std::clamp(y, 0.0, 1.0)) * p.ext_factor;
            theta = theta * (1.0 - mix) + theta_ex * mix;
          }
          const double c = std::cos(theta) * p.mscale, s = std::sin(theta) * p.mscale;
          const int a = p.mode == rope_mode::normal ? 2 * i : i;
          const int b = p.mode == rope_mode::normal ? 2 * i + 1 : i + half;
          const double x0 = v[a], x1 = v[b];
          v[a] = static_cast<float>(x0 * c - x1 * s);
          v[b] = static_cast<float>(x0 * s + x1 * c);
        }
      }
  }

  void silu_mul(const tensor& y, const tensor& gate, const tensor& up) override {
    for (int64_t i = 0; i < y.n_elements(); ++i) {
      const double g = f32(gate)[i];
      f32(y)[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * f32(up)[i]);
    }
  }

  void add_id(const tensor& y, const tensor& x, const tensor& b, const tensor& ids) override {
    const int64_t N = x.ne[0], R = x.n_rows(), E = b.n_rows();
    VKS_ASSERT(y.ne[0] == N && y.n_rows() == R && b.ne[0] == N && ids.n_elements() == R, "add_id: shape mismatch");
    for (int64_t r = 0; r < R; ++r) {
      const int64_t e = std::clamp<int64_t>(i32(ids)[r], 0, E - 1);
      for (int64_t n = 0; n < N; ++n) f32(y)[r * N + n] = f32(x)[r * N + n] + f32(b)[e * N + n];
    }
  }
  void swiglu_oai(const tensor& y, const tensor& x, float alpha, float limit) override {
    const int64_t F = y.ne[0], R = y.n_rows();
    VKS_ASSERT(x.ne[0] == 2 * F && x.n_rows() == R, "swiglu_oai: shape mismatch");
    for (int64_t r = 0; r < R; ++r)
      for (int64_t i = 0; i < F; ++i) {
        const double g = std::min(f32(x)[r * 2 * F + i], limit);
        const double u = std::clamp(f32(x)[r * 2 * F + F + i], -limit, limit);
        f32(y)[r * F + i] = static_cast<float>(g / (1.0 + std::exp(-alpha * g)) * (u + 1.0));
      }
  }
  void gelu_mul(const tensor& y, const tensor& gate, const tensor& up) override {
    for (int64_t i = 0; i < y.n_elements(); ++i) {
      const double g = f32(gate)[i];
      const double gelu = 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * g * (1.0 + 0.044715 * g * g)));
      f32(y)[i] = static_cast<float>(gelu * f32(up)[i]);
    }
  }

  void scale(const tensor& y, const tensor& x, float s, float softcap) override {
    for (int64_t i = 0; i < x.n_elements(); ++i) {
      double v = static_cast<double>(f32(x)[i]) * s;
      if (softcap > 0.f) v = softcap * std::tanh(v / softcap);
      f32(y)[i] = static_cast<float>(v);
    }
  }

  void softmax(const tensor& y, const tensor& x) override {
    const int64_t C = x.ne[0], R = x.n_rows();
    for (int64_t r = 0; r < R; ++r) {
      const float* xr = f32(x) + r * C;
      float* yr = f32(y) + r * C;
      const float mx = *std::max_element(xr, xr + C);
      double sum = 0;
      for (int64_t i = 0; i < C; ++i) sum += std::exp(static_cast<double>(xr[i]) - mx);
      for (int64_t i = 0; i < C; ++i) yr[i] = static_cast<float>(std::exp(static_cast<double>(xr[i]) - mx) / sum);
    }
  }

  void kv_store(const tensor& kc, const tensor& vc, const tensor& k, const tensor& v, const tensor& slots) override {
    const int64_t W = k.ne[0], T = k.n_rows();
    for (int64_t t = 0; t < T; ++t) {
      const int32_t s = i32(slots)[t];
      VKS_ASSERT(s >= 0 && s < kc.n_rows(), "kv_store: slot out of range");
      if (kc.type == dtype::q8_0) {  // whole rows: blocks of 32 along the row
        const uint64_t rb = row_bytes(dtype::q8_0, static_cast<uint64_t>(W));
        quantize_row(dtype::q8_0, f32(k) + t * W, bytes(kc) + s * rb, W);
        quantize_row(dtype::q8_0, f32(v) + t * W, bytes(vc) + s * rb, W);
        continue;
      }
      for (int64_t e = 0; e < W; ++e) {
        store(kc, s * W + e, f32(k)[t * W + e]);
        store(vc, s * W + e, f32(v)[t * W + e]);
      }
    }
  }

  void attention(const tensor& out, const tensor& q, const tensor& kc, const tensor& vc, const tensor& bt,
                 const tensor& seq, const tensor& pos, const attention_params& p) override {
    const int64_t T = q.n_rows(), D = p.head_dim, W = static_cast<int64_t>(p.n_kv_head) * D;
    const int group = p.n_head / p.n_kv_head;
    std::vector<double> sc, acc(static_cast<size_t>(D));
    for (int64_t t = 0; t < T; ++t) {
      const int32_t s = i32(seq)[t], P = i32(pos)[t];
      for (int h = 0; h < p.n_head; ++h) {
        const int kvh = h / group;
        const float* qv = f32(q) + t * p.n_head * D + h * D;
        sc.assign(static_cast<size_t>(P + 1), 0.0);
        double mx = -std::numeric_limits<double>::infinity();
        const int32_t j0 = p.window > 0 ? std::max(0, P - p.window + 1) : 0;
        for (int32_t j = j0; j <= P; ++j) {
          const int64_t row = int64_t{i32(bt)[s * p.max_blocks_per_seq + j / p.block_size]} * p.block_size + j % p.block_size;
          double d = 0;
          for (int64_t e = 0; e < D; ++e) d += static_cast<double>(qv[e]) * load(kc, row * W + kvh * D + e);
          sc[j] = d * p.scale;
          if (p.softcap > 0.f) sc[j] = p.softcap * std::tanh(sc[j] / p.softcap);
          mx = std::max(mx, sc[j]);
        }
        const bool sink = p.sinks.ne[0] > 0;
        const double sink_h = sink ? f32(p.sinks)[h] : 0.0;
        if (sink) mx = std::max(mx, sink_h);
        double sum = sink ? std::exp(sink_h - mx) : 0.0;  // the sink: in the denominator only
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int32_t j = j0; j <= P; ++j) {
          const int64_t row = int64_t{i32(bt)[s * p.max_blocks_per_seq + j / p.block_size]} * p.block_size + j % p.block_size;
          const double w = std::exp(sc[j] - mx);
          sum += w;
          for (int64_t e = 0; e < D; ++e) acc[e] += w * load(vc, row * W + kvh * D + e);
        }
        float* o = f32(out) + t * p.n_head * D + h * D;
        for (int64_t e = 0; e < D; ++e) o[e] = static_cast<float>(acc[e] / sum);
      }
    }
  }

  void argmax(const tensor& out, const tensor& x) override {
    const int64_t C = x.ne[0], R = x.n_rows();
    for (int64_t r = 0; r < R; ++r) {
      const float* xr = f32(x) + r * C;
      int64_t best = -1;  // first maximum, NaN skipped
      for (int64_t i = 0; i < C; ++i)
        if (!std::isnan(xr[i]) && (best < 0 || xr[i] > xr[best])) best = i;
      i32(out)[r] = static_cast<int32_t>(std::max<int64_t>(best, 0));
    }
  }

  void top_k(const tensor& vals, const tensor& ids, const tensor& x, int k) override {
    const int64_t V = x.ne[0], R = x.n_rows();
    VKS_ASSERT(k >= 1 && k <= 256 && vals.ne[0] == k && ids.ne[0] == k, "top_k: shape mismatch");
    std::vector<std::pair<float, int32_t>> row(static_cast<size_t>(V));
    for (int64_t r = 0; r < R; ++r) {
      const float* xr = f32(x) + r * V;
      for (int64_t i = 0; i < V; ++i)
        row[static_cast<size_t>(i)] = {std::isnan(xr[i]) ? -std::numeric_limits<float>::infinity() : xr[i], static_cast<int32_t>(i)};
      const auto n = static_cast<std::ptrdiff_t>(std::min<int64_t>(k, V));
      std::partial_sort(row.begin(), row.begin() + n, row.end(),
                        [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
      for (int64_t j = 0; j < k; ++j) {
        const bool real = j < n;
        f32(vals)[r * k + j] = real ? row[static_cast<size_t>(j)].first : -std::numeric_limits<float>::infinity();
        i32(ids)[r * k + j] = real ? row[static_cast<size_t>(j)].second : static_cast<int32_t>(V);
      }
    }
  }

  void moe_route(const tensor& ids, const tensor& weights, const tensor& logits, const moe_route_params& p) override {
    const int64_t E = logits.ne[0], T = logits.n_rows(), k = p.k;
    VKS_ASSERT(k >= 1 && k <= k_moe_max_used && k <= E && ids.ne[0] == k && weights.ne[0] == k && ids.n_rows() >= T &&
                   weights.n_rows() >= T,
               "moe_route: shape mismatch");
    const float ninf = -std::numeric_limits<float>::infinity();
    std::vector<std::pair<float, int32_t>> row(static_cast<size_t>(E));
    for (int64_t t = 0; t < T; ++t) {
      const float* l = f32(logits) + t * E;
      for (int64_t e = 0; e < E; ++e) row[static_cast<size_t>(e)] = {std::isnan(l[e]) ? ninf : l[e], static_cast<int32_t>(e)};
      std::partial_sort(row.begin(), row.begin() + k, row.end(),
                        [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
      // Softmax over every expert (softmax) or over the chosen ones (softmax_selected).
      const double mx = row[0].first == ninf ? 0.0 : row[0].first;
      double all = 0;
      for (int64_t e = 0; e < (p.gating == moe_gating::softmax ? E : k); ++e) all += std::exp(row[static_cast<size_t>(e)].first - mx);
      std::vector<double> w(static_cast<size_t>(k));
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) sum += w[static_cast<size_t>(j)] = std::exp(row[static_cast<size_t>(j)].first - mx) / all;
      const double div = p.norm ? std::max(sum, 6.103515625e-5) : 1.0;
      const double sc = p.scale != 0.f && p.scale != 1.f ? p.scale : 1.0;
      for (int64_t j = 0; j < k; ++j) {
        i32(ids)[t * k + j] = row[static_cast<size_t>(j)].second;
        f32(weights)[t * k + j] = static_cast<float>(w[static_cast<size_t>(j)] / div * sc);
      }
    }
  }

  void matmul_id(const tensor& y, const tensor& w, const tensor& x, const tensor& ids) override {
    expert_matmul(y, w, x, ids, false);
  }
  void matmul_id_swiglu(const tensor& y, const tensor& w, const tensor& x, const tensor& ids) override {
    expert_matmul(y, w, x, ids, true);
  }

  void moe_combine(const tensor& y, const tensor& x, const tensor& weights) override {
    const int64_t C = y.ne[0], T = y.n_rows(), k = weights.ne[0];
    VKS_ASSERT(x.ne[0] == C && x.n_rows() == k * T && weights.n_rows() >= T, "moe_combine: shape mismatch");
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        float acc = 0.f;  // in f32, slot by slot, as the kernel adds them
        for (int64_t s = 0; s < k; ++s) acc += f32(weights)[t * k + s] * f32(x)[(t * k + s) * C + c];
        f32(y)[t * C + c] = acc;
      }
  }

  void ssm_conv(const tensor& y, const tensor& x, const tensor& w, const tensor& state, const tensor& seq_info) override {
    const int64_t Cc = x.ne[0], Kc = w.ne[0];
    VKS_ASSERT(w.ne[1] == Cc && y.ne[0] == Cc && y.n_rows() == x.n_rows() && state.ne[0] == (Kc - 1) * Cc &&
                   seq_info.ne[0] == k_seq_info_fields,
               "ssm_conv: shape mismatch");
    ref::ssm_conv(f32(y), f32(x), f32(w), f32(state), i32(seq_info), seq_info.n_rows(), Cc, Kc);
  }
  void delta_net(const tensor& out, const tensor& qkv, const tensor& beta_raw, const tensor& alpha_raw,
                 const tensor& dt_bias, const tensor& a, const tensor& state, const tensor& seq_info,
                 const delta_net_params& p) override {
    const int64_t S = p.head_dim, Hv = p.n_v_heads;
    VKS_ASSERT(p.n_k_heads > 0 && Hv % p.n_k_heads == 0 && qkv.ne[0] == (2 * p.n_k_heads + Hv) * S &&
                   out.ne[0] == Hv * S && beta_raw.ne[0] == Hv && alpha_raw.ne[0] == Hv && state.ne[0] == S * S * Hv &&
                   seq_info.ne[0] == k_seq_info_fields,
               "delta_net: shape mismatch");
    ref::delta_net(f32(out), f32(qkv), f32(beta_raw), f32(alpha_raw), f32(dt_bias), f32(a), f32(state), i32(seq_info),
                   seq_info.n_rows(), p);
  }
  void sigmoid_mul(const tensor& y, const tensor& gate, const tensor& x) override {
    const bool per_row = gate.n_elements() != x.n_elements();
    VKS_ASSERT(y.n_elements() == x.n_elements() && (!per_row || gate.n_elements() == x.n_rows()), "sigmoid_mul: shape mismatch");
    const int64_t div = per_row ? x.ne[0] : 1;
    for (int64_t i = 0; i < y.n_elements(); ++i)
      f32(y)[i] = static_cast<float>(f32(x)[i] / (1.0 + std::exp(-static_cast<double>(f32(gate)[i / div]))));
  }

  // Ops run eagerly, so the read-back is a copy now (what submit() would see).
  void download_after(const tensor& src, std::span<std::byte> dst) override {
    const uint64_t n = std::min<uint64_t>(dst.size(), src.nbytes());
    if (n) std::memcpy(dst.data(), bytes(src), n);
  }

 private:
  // matmul_id / matmul_id_swiglu (contracts in backend.hpp).
  void expert_matmul(const tensor& y, const tensor& w, const tensor& x, const tensor& ids, bool swiglu) {
    const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2], k = ids.ne[0], R = y.n_rows();
    const int64_t F = swiglu ? N / 2 : N, T = R / k;
    VKS_ASSERT(x.ne[0] == K && y.ne[0] == F && R == k * ids.n_rows() && (x.n_rows() == T || x.n_rows() == R) &&
                   (!swiglu || N % 2 == 0),
               "matmul_id: shape mismatch");
    const uint64_t rb = row_bytes(w.type, K);
    std::vector<float> wr(static_cast<size_t>(K)), out(static_cast<size_t>(R * F));
    auto dot = [&](int64_t e, int64_t n, const float* xr) {
      dequantize_row(w.type, bytes(w) + rb * static_cast<uint64_t>(e * N + n), wr.data(), K);
      double acc = 0;
      for (int64_t i = 0; i < K; ++i) acc += static_cast<double>(wr[static_cast<size_t>(i)]) * xr[i];
      return static_cast<float>(acc);
    };
    for (int64_t r = 0; r < R; ++r) {
      const int32_t e = i32(ids)[r];
      VKS_ASSERT(e >= 0 && e < E, "matmul_id: expert id out of range");
      const float* xr = f32(x) + (x.n_rows() == R ? r : r / k) * K;
      for (int64_t n = 0; n < F; ++n) {
        if (!swiglu) { out[static_cast<size_t>(r * F + n)] = dot(e, n, xr); continue; }
        const double g = dot(e, n, xr), u = dot(e, F + n, xr);
        out[static_cast<size_t>(r * F + n)] = static_cast<float>(g / (1.0 + std::exp(-g)) * u);
      }
    }
    std::memcpy(f32(y), out.data(), out.size() * 4);
  }

  std::byte* bytes(const tensor& t) {
    auto& b = bufs_.at(t.buf);
    VKS_ASSERT(t.offset + t.nbytes() <= b.size(), "tensor view exceeds its buffer");
    return b.data() + t.offset;
  }
  float* f32(const tensor& t) { return reinterpret_cast<float*>(bytes(t)); }
  int32_t* i32(const tensor& t) { return reinterpret_cast<int32_t*>(bytes(t)); }
  float load(const tensor& t, int64_t i) {
    if (t.type == dtype::q8_0) {  // element i of a q8_0 tensor: block i / 32
      const std::byte* b = bytes(t) + (i / 32) * 34;
      uint16_t h;
      std::memcpy(&h, b, 2);
      return f16_to_f32(h) * static_cast<float>(static_cast<int8_t>(b[2 + i % 32]));
    }
    if (t.type == dtype::f16) {
      uint16_t h;
      std::memcpy(&h, bytes(t) + 2 * i, 2);
      return f16_to_f32(h);
    }
    return f32(t)[i];
  }
  void store(const tensor& t, int64_t i, float v) {
    if (t.type == dtype::f16) {
      const uint16_t h = f32_to_f16(v);
      std::memcpy(bytes(t) + 2 * i, &h, 2);
    } else {
      f32(t)[i] = v;
    }
  }

  device_info info_;
  bool q8_1_ = false;
  std::vector<std::vector<std::byte>> bufs_;
  bool lost_ = false;  // the fault hook made a submit fail with device_lost
};

}  // namespace

std::unique_ptr<backend> make_ref_backend() { return std::make_unique<ref_backend>(); }
std::unique_ptr<backend> make_ref_backend_q8_1() { return std::make_unique<ref_backend>(true); }

}  // namespace vks::gpu
