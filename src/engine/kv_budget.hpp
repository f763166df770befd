// KV pool sizing: how many KV blocks to allocate on a device, from an explicit byte size
// (--kv-cache-size) or a fraction of device memory (--gpu-memory-utilization) minus the
// weights and a scratch reserve. Pure arithmetic: the caller passes the device's memory
// and the weights' size; the result feeds model::runner_options::kv_blocks.
#pragma once

#include <cstdint>

#include "base/result.hpp"
#include "gpu/dtype.hpp"
#include "model/config.hpp"

namespace vks::engine {

struct kv_budget_input {
  std::uint64_t device_memory_bytes = 0;  // device-local heap (gpu::device_info::memory_bytes)
  std::uint64_t weights_bytes = 0;        // estimated device bytes of the weights
  double gpu_memory_utilization = 0.9;    // (0, 1]: share of device memory vkserve may use
  std::uint64_t kv_cache_bytes = 0;       // > 0: use exactly this much for the KV pool
  std::uint64_t scratch_reserve_bytes = 256ull << 20;  // activations, staging, driver
  int block_size = 16;                    // tokens per block
  gpu::dtype kv_type = gpu::dtype::f32;
  int max_context = 0;                    // tokens of one sequence (> 0)
  int max_num_seqs = 0;                   // > 0: no point holding more than this many full sequences
  std::uint64_t state_bytes = 0;          // a hybrid's recurrent state pool (model::state_cache), taken
                                          // from device memory like the weights
};

// Bytes one KV block takes across the layers with KV (K and V, each layer's own row width;
// a hybrid's recurrent layers and KV-shared layers have none: model::kv_bytes_per_token).
std::uint64_t kv_block_bytes(const model::model_config& c, gpu::dtype kv_type, int block_size);

// Blocks for the pool: at least one full sequence (max_context) plus one spare, at most
// max_num_seqs full sequences. Errors: out_of_memory (naming the sizes) when the budget
// cannot hold one full sequence; invalid_argument for a utilization outside (0, 1].
result<int> plan_kv_blocks(const model::model_config& c, const kv_budget_input& in);

}  // namespace vks::engine
