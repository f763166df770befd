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

namespace vks::gpu::ref {
namespace {

// One chunk's tokens of one value head, normalised, with their gates (delta_net_chunk.comp's
// phase 1 and 2): K, Q {L, S}; G cumulative log decays; A, P {L, L}.
struct wy_chunk {
  int64_t L = 0, S = 0;
  std::vector<double> K, Q, G, beta, A, P;
  double& k(int64_t r, int64_t i) { return K[static_cast<size_t>(r * S + i)]; }
  double& q(int64_t r, int64_t i) { return Q[static_cast<size_t>(r * S + i)]; }
};

wy_chunk load_wy_chunk(const float* qkv, const float* beta_raw, const float* alpha_raw, double dtb, double ah,
                       int64_t c0, int64_t L, int64_t h, const delta_net_params& p) {
  const int64_t S = p.head_dim, Hk = p.n_k_heads, Hv = p.n_v_heads, Cc = (2 * Hk + Hv) * S, hk = h % Hk;
  wy_chunk c;
  c.L = L;
  c.S = S;
  std::vector<double> row;
  for (int64_t r = 0; r < L; ++r) {
    const int64_t t = c0 + r;
    l2_normed(qkv + t * Cc + hk * S, S, p.eps, 1.0 / std::sqrt(static_cast<double>(S)), row);
    c.Q.insert(c.Q.end(), row.begin(), row.end());
    l2_normed(qkv + t * Cc + (Hk + hk) * S, S, p.eps, 1.0, row);
    c.K.insert(c.K.end(), row.begin(), row.end());
    const double g = softplus(static_cast<double>(alpha_raw[t * Hv + h]) + dtb) * ah;
    c.G.push_back((r > 0 ? c.G.back() : 0.0) + g);
    c.beta.push_back(1.0 / (1.0 + std::exp(-static_cast<double>(beta_raw[t * Hv + h]))));
  }
  c.A.assign(static_cast<size_t>(L * L), 0.0);
  c.P.assign(static_cast<size_t>(L * L), 0.0);
  for (int64_t r = 0; r < L; ++r)
    for (int64_t s = 0; s <= r; ++s) {
      double kk = 0, qk = 0;
      for (int64_t i = 0; i < S; ++i) {
        kk += c.k(r, i) * c.k(s, i);
        qk += c.q(r, i) * c.k(s, i);
      }
      const double dec = std::exp(c.G[static_cast<size_t>(r)] - c.G[static_cast<size_t>(s)]);
      if (s < r) c.A[static_cast<size_t>(r * L + s)] = c.beta[static_cast<size_t>(r)] * dec * kk;
      c.P[static_cast<size_t>(r * L + s)] = dec * qk;
    }
  return c;
}

// Phase 3 for every state column j of M (S x S): outputs of the chunk's tokens, the new state.
void wy_columns(wy_chunk& c, float* M, const float* qkv, float* out, int64_t c0, int64_t h, const delta_net_params& p) {
  const int64_t S = c.S, L = c.L, Hv = p.n_v_heads, Cc = (2 * p.n_k_heads + Hv) * S;
  std::vector<double> y(static_cast<size_t>(L)), z(static_cast<size_t>(L));
  for (int64_t j = 0; j < S; ++j) {
    for (int64_t r = 0; r < L; ++r) {
      double yr = 0, zr = 0;
      for (int64_t i = 0; i < S; ++i) {
        yr += c.k(r, i) * M[i * S + j];
        zr += c.q(r, i) * M[i * S + j];
      }
      const size_t ur = static_cast<size_t>(r);
      double d = c.beta[ur] * (qkv[(c0 + r) * Cc + (2 * p.n_k_heads + h) * S + j] - std::exp(c.G[ur]) * yr);
      for (int64_t s = 0; s < r; ++s) d -= c.A[static_cast<size_t>(r * L + s)] * y[static_cast<size_t>(s)];
      y[ur] = d;
      z[ur] = zr;
    }
    for (int64_t r = 0; r < L; ++r) {
      double o = std::exp(c.G[static_cast<size_t>(r)]) * z[static_cast<size_t>(r)];
      for (int64_t s = 0; s <= r; ++s) o += c.P[static_cast<size_t>(r * L + s)] * y[static_cast<size_t>(s)];
      out[(c0 + r) * Hv * S + h * S + j] = static_cast<float>(o);
    }
    const double gl = c.G.back();
    for (int64_t i = 0; i < S; ++i) {
      double m = std::exp(gl) * M[i * S + j];
      for (int64_t r = 0; r < L; ++r)
        m += c.k(r, i) * std::exp(gl - c.G[static_cast<size_t>(r)]) * y[static_cast<size_t>(r)];
      M[i * S + j] = static_cast<float>(m);
    }
  }
}

}  // namespace

void delta_net_chunked(float* out, const float* qkv, const float* beta_raw, const float* alpha_raw,
                       const float* dt_bias, const float* a, float* state, const int32_t* seq_info, int64_t n_seqs,
                       const delta_net_params& p, int64_t chunk) {
  const int64_t S = p.head_dim, Hv = p.n_v_heads;
  for (int64_t s = 0; s < n_seqs; ++s) {
    const int32_t* e = seq_info + s * k_seq_info_fields;
    const int64_t t0 = e[0], n = e[1];
    for (int64_t h = 0; h < Hv; ++h) {
      float* M = state + (static_cast<int64_t>(e[2]) * Hv + h) * S * S;
      if (e[3]) std::fill(M, M + S * S, 0.f);
      else if (e[4] != e[2]) std::copy_n(state + (static_cast<int64_t>(e[4]) * Hv + h) * S * S, S * S, M);
      for (int64_t c0 = t0; c0 < t0 + n;) {
        int64_t L = std::min(chunk, t0 + n - c0);
        const bool ck = e[5] >= c0 && e[5] < c0 + L;
        if (ck) L = e[5] + 1 - c0;
        wy_chunk c = load_wy_chunk(qkv, beta_raw, alpha_raw, dt_bias[h], a[h], c0, L, h, p);
        wy_columns(c, M, qkv, out, c0, h, p);
        if (ck) std::copy_n(M, S * S, state + (static_cast<int64_t>(e[6]) * Hv + h) * S * S);
        c0 += L;
      }
    }
  }
}

}  // namespace vks::gpu::ref
