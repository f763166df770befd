// state_cache: the per-sequence recurrent state of a hybrid model (qwen35's gated DeltaNet
// layers), beside the paged KV cache (kv_cache.hpp). A fixed pool of slots; slot s holds, for
// every recurrent layer, one sequence's conv state ((Kc-1)*Cc f32) and delta-rule state
// (S*S*Hv f32). Unlike KV blocks a slot has a fixed size whatever the sequence's length, and
// it holds only the state after the sequence's last processed token: the cache records that
// token count (pos) so the runner can refuse a step that does not continue it.
// Not thread-safe: used from the engine thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/result.hpp"
#include "gpu/backend.hpp"
#include "model/config.hpp"

namespace vks::model {

struct layer_state {
  gpu::tensor conv;  // {(Kc-1)*Cc, n_slots}: column = slot (gpu::backend::ssm_conv's state)
  gpu::tensor ssm;   // {S*S*Hv, n_slots} (gpu::backend::delta_net's state)
};

class state_cache {
 public:
  // Device bytes of one slot (every recurrent layer's states); 0 for a model without any.
  static uint64_t slot_bytes(const model_config& c);
  // n_slots >= 1 for a hybrid model (else an empty cache). errc::out_of_memory from the
  // backend when the pool does not fit.
  static result<state_cache> create(gpu::backend& be, const model_config& c, int n_slots);

  int n_slots() const { return static_cast<int>(pos_.size()); }
  int n_free() const { return static_cast<int>(free_.size()); }
  // Layer l's states (l a recurrent layer of the model; other layers have empty tensors).
  const layer_state& layer(int l) const { return layers_[static_cast<size_t>(l)]; }

  // A free slot, its pos 0 (the next step must start the sequence at position 0); nullopt
  // when every slot is in use.
  std::optional<int32_t> alloc();
  void free(int32_t slot);
  // Tokens the slot's state has absorbed: the position its sequence continues at; -1 when
  // unknown (a failed step), so only a restart at position 0 is accepted.
  int32_t pos(int32_t slot) const { return pos_[static_cast<size_t>(slot)]; }
  void set_pos(int32_t slot, int32_t p) { pos_[static_cast<size_t>(slot)] = p; }

 private:
  std::vector<layer_state> layers_;
  std::vector<int32_t> free_;  // LIFO
  std::vector<int32_t> pos_;
  std::vector<uint8_t> used_;
};

}  // namespace vks::model
