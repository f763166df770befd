#version 450
// The gated delta rule in chunked (WY / UT-transform) form, for prefill (gpu::backend::
// delta_net; the recurrent twin is delta_net.comp, the reference gpu/ref's
// delta_net_chunked). One workgroup per (value head, sequence) walks the sequence's tokens in
// chunks of at most C (a chunk also ends after the checkpoint token ck_t). Within a chunk of
// L tokens with M0 the state before it, G_r = g_0 + ... + g_r (log decays) and K, Q (L x S)
// the normalised keys and queries (Yang et al., "Gated Delta Networks"):
//   A[r][s] = beta_r exp(G_r - G_s) k_r.k_s (s < r), P[r][s] = exp(G_r - G_s) q_r.k_s (s <= r)
//   (I + A) D = diag(beta) (V - diag(exp G) K M0)   (forward substitution, per column)
//   o_r = exp(G_r) M0^T q_r + sum_{s<=r} P[r][s] d_s
//   M_L = exp(G_{L-1}) M0 + sum_s exp(G_{L-1} - G_s) k_s d_s^T
// Phases per chunk: (1) K, Q, gates into shared memory, normalised; (2) A and P, one pair of
// tokens per invocation; (3) each lane owns state columns j (as in delta_net.comp) and does
// the rest for them with its column of D in shared memory, writing the state once a chunk.
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint C = 32;   // tokens per chunk (shared arrays)
layout(constant_id = 2) const uint SM = 64;  // head width S (== p.S)
layout(std430, binding = 0) readonly buffer Q { float qkv[]; };
layout(std430, binding = 1) readonly buffer B { float braw[]; };
layout(std430, binding = 2) readonly buffer Al { float araw[]; };
layout(std430, binding = 3) readonly buffer Dt { float dt[]; };
layout(std430, binding = 4) readonly buffer Aa { float aa[]; };
layout(std430, binding = 5) buffer St { float st[]; };
layout(std430, binding = 6) readonly buffer I { int info[]; };
layout(std430, binding = 7) writeonly buffer O { float o[]; };
layout(push_constant) uniform P { push_delta_net p; };

shared float ks[C * SM], qs[C * SM];  // token r's normalised k / scaled q at r*S + i
shared float ds[C * SM];              // D (delta_net's d per token), r*S + j
shared float am[C * C], pm[C * C];    // A and P above, r*C + s
shared float gs[C], bs[C];            // G_r (cumulative), beta_r

// Loads tokens c0..c0+L-1 (L <= C) of key/query head hk, normalised, and their gates.
void load_chunk(uint c0, uint L, uint h, uint hk, uint lane, uint wg) {
  const uint S = SM, Cc = (2 * p.Hk + p.Hv) * S;
  for (uint e = lane; e < L * S; e += wg) {
    const uint r = e / S, i = e % S, row = (p.qkv_off >> 2) + (c0 + r) * Cc;
    qs[e] = qkv[row + hk * S + i];
    ks[e] = qkv[row + (p.Hk + hk) * S + i];
  }
  barrier();
  const float dtb = dt[(p.dt_off >> 2) + h], ah = aa[(p.A_off >> 2) + h];
  for (uint r = lane; r < L; r += wg) {
    float sq = 0.0, sk = 0.0;
    for (uint i = 0; i < S; ++i) {
      sq = fma(qs[r * S + i], qs[r * S + i], sq);
      sk = fma(ks[r * S + i], ks[r * S + i], sk);
    }
    const float fq = 1.0 / max(sqrt(sq), p.eps) / sqrt(float(S)), fk = 1.0 / max(sqrt(sk), p.eps);
    for (uint i = 0; i < S; ++i) {
      qs[r * S + i] *= fq;
      ks[r * S + i] *= fk;
    }
    const uint t = c0 + r;
    const float x = araw[(p.a_off >> 2) + t * p.Hv + h] + dtb;
    gs[r] = (x > 20.0 ? x : log(1.0 + exp(x))) * ah;
    bs[r] = 1.0 / (1.0 + exp(-braw[(p.b_off >> 2) + t * p.Hv + h]));
  }
  barrier();
  if (lane == 0)
    for (uint r = 1; r < L; ++r) gs[r] += gs[r - 1];
  barrier();
  for (uint e = lane; e < L * L; e += wg) {
    const uint r = e / L, s = e % L;
    if (s > r) continue;
    float kk = 0.0, qk = 0.0;
    for (uint i = 0; i < S; ++i) {
      kk = fma(ks[r * S + i], ks[s * S + i], kk);
      qk = fma(qs[r * S + i], ks[s * S + i], qk);
    }
    const float dec = exp(gs[r] - gs[s]);
    am[r * C + s] = s < r ? bs[r] * dec * kk : 0.0;
    pm[r * C + s] = dec * qk;
  }
  barrier();
}

// Phase 3 for state column j of the state at mb (S x S, M[i][j] at i*S + j): outputs of
// tokens c0..c0+L-1 in token order (token r needs d_s for s <= r only: the forward
// substitution and the output share one pass), then the state after them (and a copy at cb
// when ck). Column j of D lives in ds, written and read by this invocation only.
void chunk_column(uint j, uint mb, uint c0, uint L, uint h, bool ck, uint cb) {
  const uint S = SM, Cc = (2 * p.Hk + p.Hv) * S;
  const uint vb = (p.qkv_off >> 2) + c0 * Cc + (2 * p.Hk + h) * S + j;
  const uint ob = (p.o_off >> 2) + c0 * p.Hv * S + h * S + j;
  for (uint r = 0; r < L; ++r) {
    float y = 0.0, z = 0.0;  // (K M0)[r][j], (Q M0)[r][j]
    for (uint i = 0; i < S; ++i) {
      const float m = st[mb + i * S + j];
      y = fma(ks[r * S + i], m, y);
      z = fma(qs[r * S + i], m, z);
    }
    const float dec = exp(gs[r]);
    float d = bs[r] * (qkv[vb + r * Cc] - dec * y), acc = dec * z;
    for (uint s = 0; s < r; ++s) {
      const float dsj = ds[s * S + j];
      d = fma(-am[r * C + s], dsj, d);
      acc = fma(pm[r * C + s], dsj, acc);
    }
    ds[r * S + j] = d;
    o[ob + r * p.Hv * S] = fma(pm[r * C + r], d, acc);
  }
  const float gl = gs[L - 1], dl = exp(gl);
  for (uint r = 0; r < L; ++r) ds[r * S + j] *= exp(gl - gs[r]);
  for (uint i = 0; i < S; ++i) {
    float m = st[mb + i * S + j] * dl;
    for (uint r = 0; r < L; ++r) m = fma(ks[r * S + i], ds[r * S + j], m);
    st[mb + i * S + j] = m;
    if (ck) st[cb + i * S + j] = m;
  }
}

void main() {
  const uint h = gl_WorkGroupID.x, s = gl_WorkGroupID.y, lane = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint S = SM, hk = h % p.Hk;
  const uint e = (p.i_off >> 2) + s * 8;
  const uint t0 = uint(info[e]), n = uint(info[e + 1]), slot = uint(info[e + 2]), src = uint(info[e + 4]);
  const bool reset = info[e + 3] != 0;
  const int ck_t = info[e + 5];
  const uint mb = (p.s_off >> 2) + (slot * p.Hv + h) * S * S;
  const uint sb = (p.s_off >> 2) + (src * p.Hv + h) * S * S;
  const uint cb = (p.s_off >> 2) + (uint(max(info[e + 6], 0)) * p.Hv + h) * S * S;
  if (reset || src != slot)  // start from zero, or from a checkpoint's columns
    for (uint j = lane; j < S; j += wg)
      for (uint i = 0; i < S; ++i) st[mb + i * S + j] = reset ? 0.0 : st[sb + i * S + j];
  for (uint c0 = t0; c0 < t0 + n;) {
    uint L = min(C, t0 + n - c0);
    const bool ck = ck_t >= int(c0) && ck_t < int(c0 + L);
    if (ck) L = uint(ck_t) + 1 - c0;  // the chunk ends at the checkpoint token
    load_chunk(c0, L, h, hk, lane, wg);
    for (uint j = lane; j < S; j += wg) chunk_column(j, mb, c0, L, h, ck, cb);
    barrier();  // the shared arrays are reloaded for the next chunk
    c0 += L;
  }
}
