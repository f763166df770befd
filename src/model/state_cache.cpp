// state_cache: the recurrent state pool (one conv and one delta-rule tensor per recurrent
// layer, a column per slot) and its free list.
#include "model/state_cache.hpp"

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

result<state_cache> state_cache::create(gpu::backend& be, const model_config& c, int n_slots) {
  state_cache sc;
  sc.layers_.resize(static_cast<size_t>(c.n_layer));
  if (!c.is_hybrid()) return sc;
  if (n_slots <= 0) return fail(errc::invalid_argument, "state_cache: a hybrid model needs at least one state slot");
  for (int l = 0; l < c.n_layer; ++l) {
    if (!c.is_recurrent_layer(l)) continue;
    auto conv = be.alloc(gpu::dtype::f32, {conv_floats(c), n_slots, 1, 1}, "conv_state." + std::to_string(l));
    if (!conv) return fail(std::move(conv).error());
    auto ssm = be.alloc(gpu::dtype::f32, {ssm_floats(c), n_slots, 1, 1}, "ssm_state." + std::to_string(l));
    if (!ssm) return fail(std::move(ssm).error());
    sc.layers_[static_cast<size_t>(l)] = {*conv, *ssm};
  }
  sc.pos_.assign(static_cast<size_t>(n_slots), -1);
  sc.used_.assign(static_cast<size_t>(n_slots), 0);
  for (int s = n_slots - 1; s >= 0; --s) sc.free_.push_back(s);
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
