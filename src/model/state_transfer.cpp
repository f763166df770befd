// state_transfer: a sequence's recurrent state slot and KV blocks copied slot to slot, block to
// block, or to and from host memory, one tensor view (a state column, a block's rows) at a time.
#include "model/state_transfer.hpp"

#include "base/assert.hpp"

namespace vks::model {
namespace {

// Every tensor view that makes up slot `slot` of the state cache, in a fixed order.
std::vector<gpu::tensor> slot_views(const state_cache& sc, int32_t slot, int n_layers) {
  std::vector<gpu::tensor> v;
  for (int l = 0; l < n_layers; ++l) {
    const auto& ls = sc.layer(l);
    if (ls.conv.n_elements() == 0) continue;
    v.push_back(ls.conv.rows(slot, 1));
    v.push_back(ls.ssm.rows(slot, 1));
  }
  return v;
}

// Every tensor view holding block b's KV rows in the main pool, in a fixed order.
std::vector<gpu::tensor> block_views(const kv_cache& kv, int32_t b, int n_layers) {
  std::vector<gpu::tensor> v;
  const int B = kv.block_size();
  for (int l = 0; l < n_layers; ++l) {
    const auto& lc = kv.layer(l);
    if (lc.k.n_elements() == 0 || kv.in_window_pool(l)) continue;
    v.push_back(lc.k.rows(int64_t{b} * B, B));
    v.push_back(lc.v.rows(int64_t{b} * B, B));
  }
  return v;
}

result<void> save_views(gpu::backend& be, const std::vector<gpu::tensor>& views, std::vector<std::byte>& out) {
  for (const auto& t : views) {
    const size_t at = out.size();
    out.resize(at + t.nbytes());
    VKS_TRY(be.download(t, std::span(out).subspan(at, t.nbytes())));
  }
  return {};
}

result<void> load_views(gpu::backend& be, const std::vector<gpu::tensor>& views, std::span<const std::byte> in) {
  size_t at = 0;
  for (const auto& t : views) {
    if (at + t.nbytes() > in.size()) return fail(errc::invalid_argument, "state_transfer: saved copy too short");
    VKS_TRY(be.upload(t, in.subspan(at, t.nbytes())));
    at += t.nbytes();
  }
  if (at != in.size()) return fail(errc::invalid_argument, "state_transfer: saved copy of another size");
  return {};
}

int n_layers_of(const state_cache& sc) { return sc.n_layers(); }
int n_layers_of(const kv_cache& kv) { return kv.n_layers(); }

result<void> copy_views(gpu::backend& be, const std::vector<gpu::tensor>& dst, const std::vector<gpu::tensor>& src) {
  for (size_t i = 0; i < dst.size(); ++i) VKS_TRY(be.copy(dst[i], src[i]));
  return {};
}

}  // namespace

result<void> copy_state_slot(gpu::backend& be, state_cache& sc, int32_t from, int32_t to) {
  VKS_TRY(copy_views(be, slot_views(sc, to, n_layers_of(sc)), slot_views(sc, from, n_layers_of(sc))));
  sc.set_pos(to, sc.pos(from));
  return {};
}

result<void> save_state_slot(gpu::backend& be, const state_cache& sc, int32_t slot, std::vector<std::byte>& out) {
  return save_views(be, slot_views(sc, slot, n_layers_of(sc)), out);
}

result<void> load_state_slot(gpu::backend& be, state_cache& sc, int32_t slot, std::span<const std::byte> in,
                             int32_t pos) {
  VKS_TRY(load_views(be, slot_views(sc, slot, n_layers_of(sc)), in));
  sc.set_pos(slot, pos);
  return {};
}

uint64_t kv_block_bytes(const kv_cache& kv) {
  uint64_t n = 0;
  for (const auto& t : block_views(kv, 0, n_layers_of(kv))) n += t.nbytes();
  return n;
}

result<void> copy_kv_block(gpu::backend& be, const kv_cache& kv, int32_t from, int32_t to) {
  return copy_views(be, block_views(kv, to, n_layers_of(kv)), block_views(kv, from, n_layers_of(kv)));
}

result<void> save_kv_blocks(gpu::backend& be, const kv_cache& kv, std::span<const int32_t> blocks,
                            std::vector<std::byte>& out) {
  for (int32_t b : blocks) VKS_TRY(save_views(be, block_views(kv, b, n_layers_of(kv)), out));
  return {};
}

result<void> load_kv_blocks(gpu::backend& be, const kv_cache& kv, std::span<const int32_t> blocks,
                            std::span<const std::byte> in) {
  const uint64_t per = kv_block_bytes(kv);
  if (per * blocks.size() != in.size()) return fail(errc::invalid_argument, "state_transfer: saved KV of another size");
  for (size_t i = 0; i < blocks.size(); ++i)
    VKS_TRY(load_views(be, block_views(kv, blocks[i], n_layers_of(kv)), in.subspan(i * per, per)));
  return {};
}

}  // namespace vks::model
