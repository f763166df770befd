#version 450
// Tokens gathered per expert for the tiled expert GEMM (matmul/gemm.comp MUL_MAT_ID; #20,
// #22): from ids {k, T} (R = k*T (token, slot) rows, each row's expert clamped to [0, E) as
// the expert matvec clamps it), the route table gemm_id reads, built on the device (no host
// round trip). One workgroup of 256 invocations: a counting sort through shared memory.
// Route table (uint words from out_off):
//   [0]                       n_tiles
//   [1 + 2i], [2 + 2i]        tile i: (expert | rows << 16), first entry of its rows list
//   [rows_at + j]             rows list: the rows r routed to each expert, expert by expert
// Tiles are <= p.tile (64, or 32 for gemm.comp's BN32) consecutive rows of one expert
// (ceil(count / tile) per used expert, experts in ascending order), so n_tiles <= ceil(R /
// tile) + min(E, R) = the host's tile capacity. The order
// of rows within an expert is unspecified (atomics) and does not change any result: each
// gathered row's output is computed alone. Reference: the grouped matmul it serves,
// src/gpu/ref (matmul_id); the table is checked through it (tests/gpu/test_vk_moe.cpp).
#extension GL_GOOGLE_include_directive : require
#include "../common/push.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer I { int ids[]; };
layout(std430, binding = 1) buffer O { uint route[]; };
layout(push_constant) uniform P { push_moe_gather p; };

shared uint cnt[1024];    // rows per expert (E <= 1024: gpu::k_moe_max_experts)
shared uint next[1024];   // next free entry of the expert's rows list
shared uint tbase[1024];  // the expert's first tile

uint expert_of(uint r) { return min(uint(ids[(p.ids_off >> 2) + r]), p.E - 1u); }

void main() {
  const uint lid = gl_LocalInvocationID.x, o = p.out_off >> 2;
  for (uint e = lid; e < p.E; e += 256u) cnt[e] = 0u;
  barrier();
  for (uint r = lid; r < p.R; r += 256u) atomicAdd(cnt[expert_of(r)], 1u);
  barrier();
  // Exclusive prefix sums of rows and tiles over the experts (E steps, one invocation).
  if (lid == 0u) {
    uint rows = 0u, tiles = 0u;
    for (uint e = 0u; e < p.E; ++e) {
      next[e] = rows;
      tbase[e] = tiles;
      rows += cnt[e];
      tiles += (cnt[e] + p.tile - 1u) / p.tile;
    }
    route[o] = tiles;
  }
  barrier();
  for (uint e = lid; e < p.E; e += 256u)
    for (uint j = 0u; j < cnt[e]; j += p.tile) {
      const uint i = tbase[e] + j / p.tile;
      route[o + 1u + 2u * i] = e | (min(p.tile, cnt[e] - j) << 16);
      route[o + 2u + 2u * i] = next[e] + j;
    }
  barrier();  // next[] is read above before the scatter moves it
  for (uint r = lid; r < p.R; r += 256u) route[o + p.rows_at + atomicAdd(next[expert_of(r)], 1u)] = r;
}
