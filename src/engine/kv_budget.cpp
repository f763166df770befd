// KV pool sizing arithmetic (see kv_budget.hpp).
#include "engine/kv_budget.hpp"

#include <algorithm>
#include <string>

#include "model/kv_cache.hpp"

namespace vks::engine {

std::uint64_t kv_block_bytes(const model::model_config& c, gpu::dtype kv_type, int block_size) {
  return model::kv_bytes_per_token(c, kv_type, false).main * static_cast<std::uint64_t>(block_size);
}

result<int> plan_kv_blocks(const model::model_config& c, const kv_budget_input& in) {
  if (in.block_size <= 0 || in.max_context <= 0)
    return fail(errc::invalid_argument, "block size and context length must be positive");
  if (!(in.gpu_memory_utilization > 0.0 && in.gpu_memory_utilization <= 1.0))
    return fail(errc::invalid_argument, "--gpu-memory-utilization must be in (0, 1]", "gpu_memory_utilization");
  const std::uint64_t per_block = kv_block_bytes(c, in.kv_type, in.block_size);
  const std::int64_t per_seq = (in.max_context + in.block_size - 1) / in.block_size;
  const std::int64_t min_blocks = per_seq + 1;

  std::uint64_t budget = in.kv_cache_bytes;
  if (budget == 0) {
    const auto usable = static_cast<std::uint64_t>(static_cast<double>(in.device_memory_bytes) * in.gpu_memory_utilization);
    const std::uint64_t taken = in.weights_bytes + in.scratch_reserve_bytes + in.state_bytes;
    budget = usable > taken ? usable - taken : 0;
  }
  std::int64_t n = per_block ? static_cast<std::int64_t>(budget / per_block) : 0;
  if (n < min_blocks) {
    const auto mib = [](std::uint64_t b) { return std::to_string(b >> 20) + " MiB"; };
    return fail(errc::out_of_memory,
                "the KV cache budget (" + mib(budget) + ") cannot hold one sequence of " +
                    std::to_string(in.max_context) + " tokens (" + mib(per_block * static_cast<std::uint64_t>(min_blocks)) +
                    "); lower --max-model-len or raise --kv-cache-size / --gpu-memory-utilization");
  }
  if (in.max_num_seqs > 0) n = std::min<std::int64_t>(n, per_seq * in.max_num_seqs + 1);
  n = std::min<std::int64_t>(n, 1 << 24);
  return static_cast<int>(n);
}

}  // namespace vks::engine
