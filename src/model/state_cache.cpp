// state_cache: the recurrent state pool (one conv and one delta-rule tensor per recurrent
// layer, a column per slot) and its free list.
#include "model/state_cache.hpp"

#include <algorithm>
#include <string>

#include "base/assert.hpp"

namespace vks::model {
namespace {

int64_t conv_floats(const model_config& c) { return int64_t{c.ssm_conv_kernel - 1} * c.ssm_conv_channels(); }
int64_t ssm_floats(const model_config& c) { return int64_t{c.ssm_state} * c.ssm_state * c.ssm_v_heads; }

}  // namespace

uint64_t state_cache::slot_bytes(const model_config& c) {
  uint64_t n = 0;
  for (int l = 0; l < c.n_layer; ++l)
    if (c.is_recurrent_layer(l)) n += 4 * static_cast<uint64_t>(conv_floats(c) + ssm_floats(c));
  return n;
}

result<state_cache> state_cache::create(gpu::backend& be, const model_config& c, int n_slots, int n_checkpoints) {
  state_cache sc;
  sc.layers_.resize(static_cast<size_t>(c.n_layer));
  for (auto& ls : sc.layers_) ls.conv.ne = ls.ssm.ne = {0, 0, 1, 1};  // no state (until a recurrent layer's below)
  if (!c.is_hybrid()) return sc;
  if (n_slots <= 0 || n_checkpoints < 0)
    return fail(errc::invalid_argument, "state_cache: a hybrid model needs at least one state slot");
  const int64_t cols = int64_t{n_slots} + n_checkpoints;
  for (int l = 0; l < c.n_layer; ++l) {
    if (!c.is_recurrent_layer(l)) continue;
    auto conv = be.alloc(gpu::dtype::f32, {conv_floats(c), cols, 1, 1}, "conv_state." + std::to_string(l));
    if (!conv) return fail(std::move(conv).error());
    auto ssm = be.alloc(gpu::dtype::f32, {ssm_floats(c), cols, 1, 1}, "ssm_state." + std::to_string(l));
    if (!ssm) return fail(std::move(ssm).error());
    sc.layers_[static_cast<size_t>(l)] = {*conv, *ssm};
  }
  sc.n_slots_ = n_slots;
  sc.pos_.assign(static_cast<size_t>(cols), -1);
  sc.used_.assign(static_cast<size_t>(n_slots), 0);
  for (int s = n_slots - 1; s >= 0; --s) sc.free_.push_back(s);
  for (int64_t s = cols - 1; s >= n_slots; --s) sc.free_ckpt_.push_back(static_cast<int32_t>(s));
  return sc;
}

std::optional<int32_t> state_cache::alloc() {
  if (free_.empty()) return std::nullopt;
  const int32_t s = free_.back();
  free_.pop_back();
  used_[static_cast<size_t>(s)] = 1;
  pos_[static_cast<size_t>(s)] = 0;
  return s;
}

void state_cache::free(int32_t slot) {
  VKS_ASSERT(slot >= 0 && slot < n_slots() && used_[static_cast<size_t>(slot)], "state_cache: freeing a slot not in use");
  used_[static_cast<size_t>(slot)] = 0;
  pos_[static_cast<size_t>(slot)] = -1;
  free_.push_back(slot);
}

}  // namespace vks::model

namespace vks::model {

std::optional<int32_t> state_cache::find_checkpoint(std::uint64_t key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end() || pos(it->second->second) <= 0) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

bool state_cache::has_checkpoint(std::uint64_t key) const {
  auto it = by_key_.find(key);
  return it != by_key_.end() && pos(it->second->second) > 0;
}

std::optional<int32_t> state_cache::claim_checkpoint(std::uint64_t key, const std::vector<int32_t>& keep) {
  int32_t col = -1;
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    col = it->second->second;
    if (std::find(keep.begin(), keep.end(), col) != keep.end()) return std::nullopt;  // read this step
    lru_.erase(it->second);
    by_key_.erase(it);
  } else if (!free_ckpt_.empty()) {
    col = free_ckpt_.back();
    free_ckpt_.pop_back();
  } else {
    for (auto lit = lru_.end(); lit != lru_.begin();) {  // the least recently used one not kept
      --lit;
      if (std::find(keep.begin(), keep.end(), lit->second) != keep.end()) continue;
      col = lit->second;
      by_key_.erase(lit->first);
      lru_.erase(lit);
      break;
    }
    if (col < 0) return std::nullopt;
  }
  pos_[static_cast<size_t>(col)] = -1;
  lru_.emplace_front(key, col);
  by_key_[key] = lru_.begin();
  return col;
}

}  // namespace vks::model
