// state_transfer: copies of one sequence's device state outside a step, for the engine's
// hybrid-model state cache (#23): its recurrent state slot (every recurrent layer's conv and
// delta-rule column, state_cache) and the KV rows of some of its blocks (every layer with KV,
// kv_cache). Used to fork n > 1 choices from one computed prompt (slot to slot, block to
// block, gpu::backend::copy: on the device with gpu/vk) and to park a preempted sequence in
// host memory and bring it back. Callers run them between steps (engine thread only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "gpu/backend.hpp"
#include "model/kv_cache.hpp"
#include "model/state_cache.hpp"

namespace vks::model {

// Slot `from`'s state into slot `to` (both state_cache slots or checkpoint columns); `to`'s
// pos becomes `from`'s.
result<void> copy_state_slot(gpu::backend& be, state_cache& sc, int32_t from, int32_t to);
// Slot `slot`'s state appended to `out` (state_cache::slot_bytes of them).
result<void> save_state_slot(gpu::backend& be, const state_cache& sc, int32_t slot, std::vector<std::byte>& out);
// The inverse: `in` (from save_state_slot of the same cache) into `slot`, whose pos becomes `pos`.
result<void> load_state_slot(gpu::backend& be, state_cache& sc, int32_t slot, std::span<const std::byte> in,
                             int32_t pos);

// Bytes of the KV rows of one block over every layer with KV in the main pool.
uint64_t kv_block_bytes(const kv_cache& kv);
// Block `from`'s KV rows (every main-pool layer) into block `to`.
result<void> copy_kv_block(gpu::backend& be, const kv_cache& kv, int32_t from, int32_t to);
// The KV rows of `blocks`, in order, appended to `out` (kv_block_bytes each).
result<void> save_kv_blocks(gpu::backend& be, const kv_cache& kv, std::span<const int32_t> blocks,
                            std::vector<std::byte>& out);
// The inverse: `in` (from save_kv_blocks of as many blocks) into `blocks`.
result<void> load_kv_blocks(gpu::backend& be, const kv_cache& kv, std::span<const int32_t> blocks,
                            std::span<const std::byte> in);

}  // namespace vks::model
