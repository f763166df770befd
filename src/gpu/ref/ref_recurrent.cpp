// gpu/ref's gated DeltaNet ops: the conv with its rolling state and the delta rule, token by
// token per sequence, in double where they reduce.
#include "gpu/ref/ref_recurrent.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vks::gpu::ref {

void ssm_conv(float* y, const float* x, const float* w, float* state, const int32_t* seq_info, int64_t n_seqs,
              int64_t Cc, int64_t Kc) {
  const int64_t W = Kc - 1;
  std::vector<float> u(static_cast<size_t>(W + 1));
  for (int64_t s = 0; s < n_seqs; ++s) {
    const int32_t* e = seq_info + s * k_seq_info_fields;
    const int64_t t0 = e[0], n = e[1];
    float* st = state + static_cast<int64_t>(e[2]) * W * Cc;
    const float* src = state + static_cast<int64_t>(e[4]) * W * Cc;
    float* ck = e[5] >= 0 ? state + static_cast<int64_t>(e[6]) * W * Cc : nullptr;
    for (int64_t c = 0; c < Cc; ++c) {
      for (int64_t j = 0; j < W; ++j) u[static_cast<size_t>(j)] = e[3] ? 0.f : src[j * Cc + c];
      for (int64_t t = t0; t < t0 + n; ++t) {
        u[static_cast<size_t>(W)] = x[t * Cc + c];
        double acc = 0;
        for (int64_t j = 0; j < Kc; ++j) acc += static_cast<double>(w[c * Kc + j]) * u[static_cast<size_t>(j)];
        y[t * Cc + c] = static_cast<float>(acc / (1.0 + std::exp(-acc)));
        std::rotate(u.begin(), u.begin() + 1, u.end());
        if (ck && t == e[5])
          for (int64_t j = 0; j < W; ++j) ck[j * Cc + c] = u[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < W; ++j) st[j * Cc + c] = u[static_cast<size_t>(j)];
    }
  }
}

namespace {

// x / max(||x||, eps) * extra, into out.
void l2_normed(const float* x, int64_t n, float eps, double extra, std::vector<double>& out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double inv = extra / std::max(std::sqrt(ss), static_cast<double>(eps));
  out.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = x[i] * inv;
}

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

}  // namespace

void delta_net(float* out, const float* qkv, const float* beta_raw, const float* alpha_raw, const float* dt_bias,
               const float* a, float* state, const int32_t* seq_info, int64_t n_seqs, const delta_net_params& p) {
  const int64_t S = p.head_dim, Hk = p.n_k_heads, Hv = p.n_v_heads, Cc = (2 * Hk + Hv) * S;
  std::vector<double> q, k, d(static_cast<size_t>(S));
  for (int64_t s = 0; s < n_seqs; ++s) {
    const int32_t* e = seq_info + s * k_seq_info_fields;
    const int64_t t0 = e[0], n = e[1];
    for (int64_t h = 0; h < Hv; ++h) {
      float* M = state + (static_cast<int64_t>(e[2]) * Hv + h) * S * S;  // M[i * S + j]
      if (e[3]) std::fill(M, M + S * S, 0.f);
      else if (e[4] != e[2]) std::copy_n(state + (static_cast<int64_t>(e[4]) * Hv + h) * S * S, S * S, M);
      float* ck = e[5] >= 0 ? state + (static_cast<int64_t>(e[6]) * Hv + h) * S * S : nullptr;
      const int64_t hk = h % Hk;
      for (int64_t t = t0; t < t0 + n; ++t) {
        const float* row = qkv + t * Cc;
        l2_normed(row + hk * S, S, p.eps, 1.0 / std::sqrt(static_cast<double>(S)), q);
        l2_normed(row + (Hk + hk) * S, S, p.eps, 1.0, k);
        const float* v = row + (2 * Hk + h) * S;
        const double g = softplus(static_cast<double>(alpha_raw[t * Hv + h]) + dt_bias[h]) * a[h];
        const double decay = std::exp(g), beta = 1.0 / (1.0 + std::exp(-static_cast<double>(beta_raw[t * Hv + h])));
        for (int64_t j = 0; j < S; ++j) {
          double sk = 0;
          for (int64_t i = 0; i < S; ++i) sk += M[i * S + j] * decay * k[static_cast<size_t>(i)];
          d[static_cast<size_t>(j)] = beta * (v[j] - sk);
        }
        for (int64_t j = 0; j < S; ++j) {
          double o = 0;
          for (int64_t i = 0; i < S; ++i) {
            const double m = M[i * S + j] * decay + k[static_cast<size_t>(i)] * d[static_cast<size_t>(j)];
            M[i * S + j] = static_cast<float>(m);
            o += m * q[static_cast<size_t>(i)];
          }
          out[t * Hv * S + h * S + j] = static_cast<float>(o);
        }
        if (ck && t == e[5]) std::copy_n(M, S * S, ck);
      }
    }
  }
}

}  // namespace vks::gpu::ref
