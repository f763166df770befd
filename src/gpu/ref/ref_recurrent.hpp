// gpu/ref's recurrent ops (gated DeltaNet): plain loops over host memory, the oracle for
// the Vulkan kernels (shaders/recurrent/). Contracts: gpu::backend::ssm_conv, delta_net.
// Pointers are to the tensors' first elements; seq_info as k_seq_info_fields ints per sequence.
#pragma once

#include <cstdint>

#include "gpu/backend.hpp"

namespace vks::gpu::ref {

// x, y {Cc, T}; w {Kc, Cc}; state columns of (Kc-1)*Cc floats.
void ssm_conv(float* y, const float* x, const float* w, float* state, const int32_t* seq_info, int64_t n_seqs,
              int64_t Cc, int64_t Kc);
// qkv {Cc, T}; beta_raw, alpha_raw {Hv, T}; state columns of S*S*Hv floats; out {Hv*S, T}.
void delta_net(float* out, const float* qkv, const float* beta_raw, const float* alpha_raw, const float* dt_bias,
               const float* a, float* state, const int32_t* seq_info, int64_t n_seqs, const delta_net_params& p);
// The same op in chunked (WY) form, chunks of at most `chunk` tokens (a chunk also ends after
// the checkpoint token): the twin of shaders/recurrent/delta_net_chunk.comp, equal to
// delta_net within float rounding.
void delta_net_chunked(float* out, const float* qkv, const float* beta_raw, const float* alpha_raw,
                       const float* dt_bias, const float* a, float* state, const int32_t* seq_info, int64_t n_seqs,
                       const delta_net_params& p, int64_t chunk);

}  // namespace vks::gpu::ref
