// state_cache: the per-sequence recurrent state of a hybrid model (qwen35's gated DeltaNet
// layers), beside the paged KV cache (kv_cache.hpp). A fixed pool of slots; slot s holds, for
// every recurrent layer, one sequence's conv state ((Kc-1)*Cc f32) and delta-rule state
// (S*S*Hv f32). Unlike KV blocks a slot has a fixed size whatever the sequence's length, and
// it holds only the state after the sequence's last processed token: the cache records that
// token count (pos) so the runner can refuse a step that does not continue it.
// Checkpoints (prefix caching for hybrids): n_checkpoints more columns hold copies of
// sequences' states at KV block boundaries, keyed by the chain hash of the block that ends
// there (engine/block_manager's), so a prompt that extends an earlier one resumes from the
// last checkpoint its cached blocks reach; evicted least recently used.
// Not thread-safe: used from the engine thread only.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
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
  static result<state_cache> create(gpu::backend& be, const model_config& c, int n_slots, int n_checkpoints = 0);

  int n_slots() const { return n_slots_; }
  int n_checkpoints() const { return static_cast<int>(pos_.size()) - n_slots_; }
  int n_free() const { return static_cast<int>(free_.size()); }
  // Layer l's states (l a recurrent layer of the model; other layers have empty tensors).
  const layer_state& layer(int l) const { return layers_[static_cast<size_t>(l)]; }
  int n_layers() const { return static_cast<int>(layers_.size()); }

  // A free slot, its pos 0 (the next step must start the sequence at position 0); nullopt
  // when every slot is in use.
  std::optional<int32_t> alloc();
  void free(int32_t slot);
  // Tokens the slot's state has absorbed: the position its sequence continues at; -1 when
  // unknown (a failed step), so only a restart at position 0 is accepted.
  int32_t pos(int32_t slot) const { return pos_[static_cast<size_t>(slot)]; }
  void set_pos(int32_t slot, int32_t p) { pos_[static_cast<size_t>(slot)] = p; }

  // The checkpoint column holding the state at the end of the block whose chain hash is
  // `key`, once written (pos > 0); marks it recently used. nullopt when there is none.
  std::optional<int32_t> find_checkpoint(std::uint64_t key);
  bool has_checkpoint(std::uint64_t key) const;
  // A column to write the checkpoint of `key` into (its old one, a free one, or the least
  // recently used other than those in `keep`), its pos -1 until the step that writes it
  // sets it; nullopt when there are no checkpoint columns or all are kept.
  std::optional<int32_t> claim_checkpoint(std::uint64_t key, const std::vector<int32_t>& keep);

 private:
  std::vector<layer_state> layers_;
  std::vector<int32_t> free_;  // LIFO
  std::vector<int32_t> pos_;
  std::vector<uint8_t> used_;
  int n_slots_ = 0;
  std::list<std::pair<std::uint64_t, int32_t>> lru_;  // checkpoints, front = most recent
  std::unordered_map<std::uint64_t, std::list<std::pair<std::uint64_t, int32_t>>::iterator> by_key_;
  std::vector<int32_t> free_ckpt_;
};

}  // namespace vks::model
