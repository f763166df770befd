#version 450
// Flash attention over the paged KV cache for GPU tunings: decode as flash decoding (the
// context split across workgroups, partials merged by attention_merge.comp) and prefill /
// batches as tiled flash attention (a tile of query rows against K/V tiles in shared memory).
// Same contract as attention.comp (causal, GQA, paged block table, sliding window, softcap,
// f32/f16/q8_0 caches), plus attention sinks (gpt-oss): with p.flags bit 0, sinks[h] (f32 at
// p.sink_off) is one more logit in each softmax denominator, with no value.
// Grid: x = Hkv * (G / GC) (a KV head and GC of its G = H / Hkv query heads), y = tiles of NQ
// consecutive tokens, z = p.nsplit parts of each token's key range. A workgroup's R = NQ * GC
// query rows (row r: token t0 + r / GC, head h0 + r % GC) share every K/V tile it loads, so a
// KV head is read once per tile of tokens, not once per query head. Lanes load K/V rows
// contiguously (lane i: element i of a row); scores: one (row, key) pair per lane; output
// (row, d) pairs spread over the lanes, accumulated with online softmax rescaling.
// Rows of a tile from different sequences (mixed batches) are served one sequence at a time.
// p.ztot == 1: the output is written normalized; else each row writes its part's (acc, m, l)
// to the partials buffer at ((t * H + h) * ztot + z0 + z) * (D + 2) floats (acc[D], m, l).
// A KV pool split over several bindings (gpu/vk/kv_partition.hpp): the bound K/V windows hold
// blocks [p.blk_lo, p.blk_lo + p.blk_n); one dispatch per window, each its own nsplit parts
// (z0 = window * nsplit), keys in other windows masked (score -inf, V row zero).
// Spec constants: 0 WG (<= 256), 1 GC, 2 D (head dim), 3 NQ, 4 BK (keys per K/V tile), R and BK
// picked by gpu/vk/flash_shape.hpp: R * D <= 1024, BK = 16 (8 above D = 256), both shrunk
// where the device's shared memory is short. Shared memory (q, the accumulators, one K/V tile,
// scores, score partials): 25.5 KiB at D = 256 (R = 4, BK = 16), 25.2 KiB at D = 512 (R = 2,
// BK = 8). The accumulators live in shared memory (each lane owns its (row, d) entries), which
// bounds registers and keeps the kernel small for any R and D. Scores: LP lanes per (row, key)
// dot when the tile has at most half as many pairs as the workgroup has lanes (D = 512:
// R * BK = 16 pairs, LP = 4 at WG 64), each over D / LP dims, summed through shared memory (one
// more barrier per tile).
// Reference: src/gpu/ref (attention).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "../common/push.glsl"
#ifdef KV_Q8
#include "../common/kv_q8.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint GC = 1;   // query heads per workgroup (divides G)
layout(constant_id = 2) const uint D = 64;   // head dim
layout(constant_id = 3) const uint NQ = 1;   // tokens per workgroup
layout(constant_id = 4) const uint BK = 16;  // keys per K/V tile
const uint R = NQ * GC;                      // query rows per workgroup
const uint DP = D + 1;                       // shared K/V row stride (no bank conflicts)

layout(std430, binding = 0) readonly buffer Q { float q[]; };
#if defined(KV_F16) || defined(KV_Q8)
layout(std430, binding = 1) readonly buffer KC { uint kc[]; };
layout(std430, binding = 2) readonly buffer VC { uint vc[]; };
#else
layout(std430, binding = 1) readonly buffer KC { float kc[]; };
layout(std430, binding = 2) readonly buffer VC { float vc[]; };
#endif
layout(std430, binding = 3) readonly buffer BT { int bt[]; };
layout(std430, binding = 4) readonly buffer SQ { int seq[]; };
layout(std430, binding = 5) readonly buffer PS { int pos[]; };
layout(std430, binding = 6) writeonly buffer O { float o[]; };     // out, or partials (nsplit > 1)
layout(std430, binding = 7) readonly buffer SK { float sinks[]; };
layout(push_constant) uniform P { push_attention_flash p; };

shared float qs[R * D];
shared float accs[R * D];  // output accumulators (row r, dim d at r * D + d)
shared float kv[BK * DP];
shared float ps[R * BK];
shared float sp[256];       // score partials (LP > 1): pair e's lane l at e * LP + l; R * BK * LP <= WG
shared float ms[R], ls[R], cs[R];
shared uint krow[BK];       // cache row in the bound window, or k_absent
const uint k_absent = 0xffffffffu;  // the key's block lies outside the bound window
shared int rseq[R], rlo[R], rhi[R];

#if defined(KV_F16)
float ldk(uint i) { uint b = (p.k_off >> 1) + i; vec2 h = unpackHalf2x16(kc[b >> 1]); return (b & 1u) != 0u ? h.y : h.x; }
float ldv(uint i) { uint b = (p.v_off >> 1) + i; vec2 h = unpackHalf2x16(vc[b >> 1]); return (b & 1u) != 0u ? h.y : h.x; }
#elif !defined(KV_Q8)
float ldk(uint i) { return kc[(p.k_off >> 2) + i]; }
float ldv(uint i) { return vc[(p.v_off >> 2) + i]; }
#endif

// The tile's BK key rows of K (k) or V into kv, lanes along each row. q8_0: four elements
// (one word of quants and the block's scale) per lane.
void load_tile(bool k, uint W, uint kvoff) {
  const uint lid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
#ifdef KV_Q8
  [[dont_unroll]] for (uint e = 4u * lid; e < BK * D; e += 4u * WG) {
    const uint c = e / D, d = e % D, i = krow[c] * W + kvoff + d;
    const vec4 x = krow[c] == k_absent ? vec4(0.0) : k ? Q8_VEC4(kc, p.k_off, i) : Q8_VEC4(vc, p.v_off, i);
    kv[c * DP + d] = x.x;
    kv[c * DP + d + 1u] = x.y;
    kv[c * DP + d + 2u] = x.z;
    kv[c * DP + d + 3u] = x.w;
  }
#else
  [[dont_unroll]] for (uint e = lid; e < BK * D; e += WG) {
    const uint row = krow[e / D], i = row * W + kvoff + e % D;
    kv[(e / D) * DP + e % D] = row == k_absent ? 0.0 : k ? ldk(i) : ldv(i);
  }
#endif
}

void main() {
  const uint lid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  const uint G = p.H / p.Hkv, kvh = gl_WorkGroupID.x / (G / GC);
  const uint h0 = kvh * G + (gl_WorkGroupID.x % (G / GC)) * GC, t0 = gl_WorkGroupID.y * NQ;
  const uint W = p.Hkv * D, kvoff = kvh * D, part = gl_WorkGroupID.z;
  // Lanes per score dot: a power of two with R * BK * LP <= WG (<= 256, sp's size).
  uint LP = 1u;
  while (LP < 16u && 2u * LP * R * BK <= min(WG, 256u)) LP *= 2u;

  for (uint e = lid; e < R * D; e += WG) {
    const uint r = e / D, t = t0 + r / GC;
    qs[e] = t < p.T ? q[(p.q_off >> 2) + (t * p.H + h0 + r % GC) * D + e % D] * p.scale : 0.0;
    accs[e] = 0.0;
  }
  for (uint r = lid; r < R; r += WG) {
    const uint t = t0 + r / GC;
    const int P = t < p.T ? pos[(p.pos_off >> 2) + t] : -1;
    rseq[r] = t < p.T ? seq[(p.seq_off >> 2) + t] : -1;
    rlo[r] = p.window > 0u ? max(0, P - int(p.window) + 1) : 0;
    rhi[r] = P;
    ms[r] = -1.0 / 0.0;
    ls[r] = 0.0;
  }
  barrier();

  uint done = 0u;  // rows served (same value in every lane)
  for (uint r = 0u; r < R; ++r)
    if (rseq[r] < 0) done |= 1u << r;
  while (done != (1u << R) - 1u) {
    // One sequence: the first row not served and every row of the tile in its sequence.
    const int s = rseq[findLSB(~done)];
    uint act = 0u;
    int lo = 0x7fffffff, hi = -1;
    for (uint r = 0u; r < R; ++r)
      if (rseq[r] == s && (done & (1u << r)) == 0u) {
        act |= 1u << r;
        lo = min(lo, rlo[r]);
        hi = max(hi, rhi[r]);
      }
    done |= act;
    // This workgroup's part of [lo, hi]: whole tiles of BK keys.
    const int per = int((uint(hi - lo + 1) + p.nsplit - 1u) / p.nsplit + BK - 1u) / int(BK) * int(BK);
    const int a = lo + int(part) * per, b = min(hi, a + per - 1);
    for (int j0 = a; j0 <= b; j0 += int(BK)) {
      if (lid < BK) {
        const int j = min(j0 + int(lid), b);
        const uint blk = uint(bt[(p.bt_off >> 2) + uint(s) * p.maxb + uint(j) / p.B]) - p.blk_lo;
        krow[lid] = blk < p.blk_n ? blk * p.B + uint(j) % p.B : k_absent;
      }
      barrier();
      load_tile(true, W, kvoff);
      barrier();
      if (LP > 1u) {  // partial dots: lane l of pair e sums dims l, l + LP, ... (uniform branch)
        for (uint e = lid; e < R * BK * LP; e += WG) {
          const uint r = e / (BK * LP), c = (e / LP) % BK, l = e % LP;
          float d = 0.0;
          [[dont_unroll]] for (uint i = l; i < D; i += LP) d += qs[r * D + i] * kv[c * DP + i];
          sp[e] = d;
        }
        barrier();
      }
      for (uint e = lid; e < R * BK; e += WG) {  // scores
        const uint r = e / BK, c = e % BK;
        const int j = j0 + int(c);
        float sc = -1.0 / 0.0;
        if ((act & (1u << r)) != 0u && j <= b && j >= rlo[r] && j <= rhi[r] && krow[c] != k_absent) {
          float d = 0.0;
          if (LP > 1u)
            for (uint l = 0u; l < LP; ++l) d += sp[e * LP + l];
          else
            [[dont_unroll]] for (uint i = 0u; i < D; ++i) d += qs[r * D + i] * kv[c * DP + i];
          sc = p.softcap > 0.0 ? p.softcap * tanh(clamp(d / p.softcap, -15.0, 15.0)) : d;
        }
        ps[e] = sc;
      }
      barrier();
      for (uint r = lid; r < R; r += WG) {  // online softmax per row
        float mt = ms[r];
        for (uint c = 0u; c < BK; ++c) mt = max(mt, ps[r * BK + c]);
        float sum = 0.0, corr = 1.0;
        if (mt > -1.0 / 0.0) {
          corr = exp(ms[r] - mt);
          for (uint c = 0u; c < BK; ++c) {
            const float e = exp(ps[r * BK + c] - mt);
            ps[r * BK + c] = e;
            sum += e;
          }
          ms[r] = mt;
        } else {
          for (uint c = 0u; c < BK; ++c) ps[r * BK + c] = 0.0;
        }
        ls[r] = ls[r] * corr + sum;
        cs[r] = corr;
      }
      load_tile(false, W, kvoff);
      barrier();
      for (uint e = lid; e < R * D; e += WG) {
        const uint r = e / D, d = e % D;
        float x = accs[e] * cs[r];
        [[unroll]] for (uint c = 0u; c < BK; ++c) x += ps[r * BK + c] * kv[c * DP + d];
        accs[e] = x;
      }
      barrier();
    }
  }

  const bool sink = (p.flags & 1u) != 0u;
  for (uint e = lid; e < R * D; e += WG) {
    const uint r = e / D, d = e % D, t = t0 + r / GC, h = h0 + r % GC;
    if (t >= p.T) continue;
    if (p.ztot == 1u) {
      float m = ms[r], l = ls[r], x = accs[e];
      if (sink) {  // the sink's logit joins the denominator
        const float sv = sinks[(p.sink_off >> 2) + h], mm = max(m, sv), f = exp(m - mm);
        l = l * f + exp(sv - mm);
        x *= f;
      }
      o[(p.o_off >> 2) + (t * p.H + h) * D + d] = x / l;
    } else {
      const uint base = (p.o_off >> 2) + ((t * p.H + h) * p.ztot + p.z0 + part) * (D + 2u);
      o[base + d] = accs[e];
      if (d == 0u) {
        o[base + D] = ms[r];
        o[base + D + 1u] = ls[r];
      }
    }
  }
}
