// Recording, hazard-driven barriers, command-buffer encoding and reuse, submit, profiling.
#include "gpu/vk/recorder.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "gpu/vk/check.hpp"

namespace vks::gpu::vk {
namespace {
constexpr size_t k_max_cached = 16;
constexpr uint64_t k_fence_timeout_ns = 120ull * 1000 * 1000 * 1000;
}  // namespace

recorder::recorder(const context& ctx, pipelines& pipes, bool profile)
    : ctx_(ctx), pipes_(pipes), profile_(profile && ctx.caps().timestamps), log_shapes_(profile) {}

void recorder::log_profile() const {
  std::vector<std::pair<std::string, std::pair<double, uint64_t>>> v(prof_.begin(), prof_.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  for (const auto& [name, tc] : v)
    log::info("profile {:<24} {:>8} calls {:>10.3f} ms total {:>9.1f} us/call", name, tc.second, tc.first / 1e6,
              tc.first / 1e3 / static_cast<double>(tc.second));
  for (const auto& [k, n] : shape_runs_)
    log::info("profile step shape: {} dispatches, {} barriers, {} uploads, {} bytes moved: {} steps", k[0], k[1], k[2],
              k[3], n);
}

recorder::~recorder() {
  VkDevice d = ctx_.device();
  if (in_flight_) vkWaitForFences(d, 1, &fence_, VK_TRUE, k_fence_timeout_ns);  // launched, never waited for
  if (!prof_.empty() || !shape_runs_.empty()) log_profile();
  if (queries_) vkDestroyQueryPool(d, queries_, nullptr);
  if (fence_) vkDestroyFence(d, fence_, nullptr);
  if (pool_) vkDestroyCommandPool(d, pool_, nullptr);
}

result<void> recorder::init() {
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = ctx_.queue_family();
  VKS_VK_TRY(vkCreateCommandPool(ctx_.device(), &pci, nullptr, &pool_), "vkCreateCommandPool");
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VKS_VK_TRY(vkCreateFence(ctx_.device(), &fci, nullptr, &fence_), "vkCreateFence");
  return ok();
}

void recorder::begin() {
  patching_ = patch_bad_ = false;
  ops_.clear();
  pending_.clear();
  staged_.clear();
  stats_ = {};
  readback_used_ = 0;
  t_begin_ = std::chrono::steady_clock::now();
}

void recorder::note_access(std::span<const access> acc, uint32_t& barrier) {
  barrier = 0;
  for (const auto& a : acc)
    for (const auto& p : pending_)
      if (a.buf == p.buf && a.lo < p.hi && p.lo < a.hi && (a.write || p.write)) barrier = 1;
  stats_.barriers += barrier;
  if (barrier) pending_.clear();
  pending_.insert(pending_.end(), acc.begin(), acc.end());
}

void recorder::dispatch(uint32_t pipeline, const binding_set& b, std::span<const access> acc, const void* push,
                        uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz, uint64_t moved) {
  VKS_ASSERT(push_size <= k_push_bytes, "push constants too large");
  if (patching_) {  // a resumed step records no op
    patch_bad_ = true;
    return;
  }
  if (moved == 0)
    for (const auto& a : acc) moved += a.hi - a.lo;
  ++stats_.dispatches;
  stats_.bytes_moved += moved;
  op o;
  std::memset(static_cast<void*>(&o), 0, sizeof o);  // padding-free POD record
  o.kind = 0;
  o.pipe = pipeline;
  o.push_size = push_size;
  o.groups[0] = gx;
  o.groups[1] = gy;
  o.groups[2] = gz;
  o.b = b;
  std::memcpy(o.push, push, push_size);
  note_access(acc, o.barrier);
  ops_.push_back(o);
}

void recorder::copy(VkBuffer dst, uint64_t dst_off, std::span<const std::byte> src) {
  if (patching_) {  // the parked step's next copy: same destination and size, new bytes
    patch_copy_ = next_op(patch_copy_, 1);
    if (patch_copy_ == ops_.size() || ops_[patch_copy_].dst != dst || ops_[patch_copy_].dst_off != dst_off ||
        ops_[patch_copy_].size != src.size()) {
      patch_bad_ = true;
      return;
    }
    std::memcpy(staged_.data() + ops_[patch_copy_++].src_off, src.data(), src.size());
    return;
  }
  op o;
  std::memset(static_cast<void*>(&o), 0, sizeof o);  // padding-free POD record
  o.kind = 1;
  o.src_off = staged_.size();
  o.dst_off = dst_off;
  o.size = src.size();
  o.dst = dst;
  const access a{dst, dst_off, dst_off + src.size(), true};
  note_access({&a, 1}, o.barrier);
  stats_.bytes_uploaded += src.size();
  stats_.bytes_moved += src.size();
  staged_.insert(staged_.end(), src.begin(), src.end());
  staged_.resize((staged_.size() + 15) & ~size_t{15});
  ops_.push_back(o);
}

uint64_t recorder::read_back(VkBuffer src, uint64_t src_off, uint64_t n) {
  if (patching_) {  // the parked step's next read-back: same source and size
    patch_read_ = next_op(patch_read_, 2);
    if (patch_read_ == ops_.size() || ops_[patch_read_].src != src || ops_[patch_read_].src_off != src_off ||
        ops_[patch_read_].size != n) {
      patch_bad_ = true;
      return 0;
    }
    return ops_[patch_read_++].dst_off;
  }
  op o;
  std::memset(static_cast<void*>(&o), 0, sizeof o);  // padding-free POD record
  o.kind = 2;
  o.src = src;
  o.src_off = src_off;
  o.dst_off = readback_used_;
  o.size = n;
  const access a{src, src_off, src_off + n, false};
  note_access({&a, 1}, o.barrier);
  readback_used_ = (readback_used_ + n + 15) & ~uint64_t{15};
  stats_.bytes_downloaded += n;  // read back in the step's own submission (step_stats contract)
  ops_.push_back(o);
  return o.dst_off;
}

result<void> recorder::ensure_readback(uint64_t n) {
  if (readback_.size() >= n && readback_.handle()) return ok();
  drop_cached();  // cached command buffers reference the old read-back buffer
  uint64_t size = std::max<uint64_t>(uint64_t{1} << 16, readback_.size());
  while (size < n) size *= 2;
  readback_ = raw_buffer();
  auto rb = raw_buffer::create(ctx_, size, true);
  if (!rb) return fail(std::move(rb).error());
  if (!rb->mapped()) return fail(errc::unsupported, "vulkan: no host-visible coherent memory for read-backs");
  readback_ = std::move(*rb);
  return ok();
}

void recorder::drop_cached() {
  for (auto& c : cache_) vkFreeCommandBuffers(ctx_.device(), pool_, 1, &c.cb);
  cache_.clear();
}

result<void> recorder::ensure_staging(uint64_t n) {
  if (staging_.size() >= n && staging_.handle()) return ok();
  drop_cached();  // cached command buffers reference the old staging buffer
  uint64_t size = std::max<uint64_t>(uint64_t{1} << 20, staging_.size());
  while (size < n) size *= 2;
  staging_ = raw_buffer();
  auto rb = raw_buffer::create(ctx_, size, true);
  if (!rb) return fail(std::move(rb).error());
  staging_ = std::move(*rb);
  return ok();
}

result<void> recorder::ensure_queries(uint32_t n) {
  if (n <= n_queries_) return ok();
  drop_cached();
  if (queries_) vkDestroyQueryPool(ctx_.device(), queries_, nullptr);
  n_queries_ = std::max(n, 2 * n_queries_);
  VkQueryPoolCreateInfo qci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qci.queryCount = n_queries_;
  VKS_VK_TRY(vkCreateQueryPool(ctx_.device(), &qci, nullptr, &queries_), "vkCreateQueryPool");
  return ok();
}

result<VkCommandBuffer> recorder::encode() {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  VKS_VK_TRY(vkAllocateCommandBuffers(ctx_.device(), &ai, &cb), "vkAllocateCommandBuffers");
  std::vector<VkDescriptorSet> sets(ops_.size(), VK_NULL_HANDLE);
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].kind != 0) continue;
    sets[i] = pipes_.set_for(ops_[i].b);
    if (!sets[i]) {  // pool exhausted: free every set (and the buffers using them), retry once
      vkFreeCommandBuffers(ctx_.device(), pool_, 1, &cb);
      drop_cached();
      pipes_.reset_sets();
      return fail(errc::out_of_memory, "retry");
    }
  }
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vkBeginCommandBuffer(cb, &bi);
  if (profile_) {
    vkCmdResetQueryPool(cb, queries_, 0, static_cast<uint32_t>(ops_.size() + 1));
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);
  }
  VkPipeline cur_pipe = VK_NULL_HANDLE;
  VkDescriptorSet cur_set = VK_NULL_HANDLE;
  bool any_readback = false;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const op& o = ops_[i];
    if (o.barrier) {
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT;
      const VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
      vkCmdPipelineBarrier(cb, st, st, 0, 1, &mb, 0, nullptr, 0, nullptr);
    }
    if (o.kind == 1) {
      const VkBufferCopy region{o.src_off, o.dst_off, o.size};
      vkCmdCopyBuffer(cb, staging_.handle(), o.dst, 1, &region);
    } else if (o.kind == 2) {
      const VkBufferCopy region{o.src_off, o.dst_off, o.size};
      vkCmdCopyBuffer(cb, o.src, readback_.handle(), 1, &region);
      any_readback = true;
    } else {
      if (pipes_.pipeline(o.pipe) != cur_pipe) {
        cur_pipe = pipes_.pipeline(o.pipe);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, cur_pipe);
        cur_set = VK_NULL_HANDLE;
      }
      if (sets[i] != cur_set) {
        cur_set = sets[i];
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipes_.layout(), 0, 1, &cur_set, 0, nullptr);
      }
      vkCmdPushConstants(cb, pipes_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, o.push_size, o.push);
      vkCmdDispatch(cb, o.groups[0], o.groups[1], o.groups[2]);
    }
    if (profile_)
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, static_cast<uint32_t>(i + 1));
  }
  if (any_readback) {  // make the read-back copies visible to the host after the fence
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }
  VKS_VK_TRY(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  return cb;
}

size_t recorder::next_op(size_t from, uint32_t kind) const {
  while (from < ops_.size() && ops_[from].kind != kind) ++from;
  return from;
}

bool recorder::patch_complete() const {
  return !patch_bad_ && next_op(patch_copy_, 1) == ops_.size() && next_op(patch_read_, 2) == ops_.size();
}

void recorder::swap_state(step_state& s) {
  std::swap(ops_, s.ops);
  std::swap(pending_, s.pending);
  std::swap(staged_, s.staged);
  std::swap(readback_used_, s.readback_used);
  std::swap(stats_, s.stats);
  std::swap(t_begin_, s.t_begin);
}

void recorder::begin_aside() {
  swap_state(flight_);  // flight_ holds the in-flight step until park()
  begin();
}

void recorder::park() {
  parked_ns_ = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t_begin_).count());
  swap_state(parked_);
  swap_state(flight_);
  has_parked_ = true;
}

bool recorder::resume() {
  if (!has_parked_) return false;
  swap_state(parked_);
  has_parked_ = false;
  patching_ = true;
  patch_bad_ = false;
  patch_copy_ = patch_read_ = 0;
  stats_.record_ns = stats_.wait_ns = 0;
  stats_.overlapped = 1;
  stats_.record_hidden_ns = parked_ns_;
  t_begin_ = std::chrono::steady_clock::now();
  return true;
}

void recorder::drop_parked() {
  has_parked_ = false;
  parked_ = {};
}

result<void> recorder::submit() {
  VKS_TRY(launch());
  return wait();
}

result<void> recorder::launch() {
  patching_ = false;
  if (ops_.empty()) return ok();
  if (!staged_.empty()) {
    VKS_TRY(ensure_staging(staged_.size()));
    std::memcpy(staging_.mapped(), staged_.data(), staged_.size());
  }
  if (readback_used_) VKS_TRY(ensure_readback(readback_used_));
  if (profile_) VKS_TRY(ensure_queries(static_cast<uint32_t>(ops_.size() + 1)));
  ++tick_;
  cached_cb* hit = nullptr;
  for (auto& c : cache_)
    if (c.ops.size() == ops_.size() && std::memcmp(c.ops.data(), ops_.data(), ops_.size() * sizeof(op)) == 0) hit = &c;
  if (hit) {
    ++n_reused_;
  } else {
    auto cb = encode();
    if (!cb && cb.error().message == "retry") cb = encode();
    if (!cb) return fail(std::move(cb).error());
    if (cache_.size() >= k_max_cached) {
      auto lru = std::min_element(cache_.begin(), cache_.end(), [](const auto& a, const auto& b) { return a.last_used < b.last_used; });
      vkFreeCommandBuffers(ctx_.device(), pool_, 1, &lru->cb);
      cache_.erase(lru);
    }
    cache_.push_back({ops_, *cb, 0});
    hit = &cache_.back();
    ++n_recorded_;
  }
  hit->last_used = tick_;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &hit->cb;
  const auto ns = [](auto d) { return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()); };
  const auto t_submit = std::chrono::steady_clock::now();
  stats_.record_ns += ns(t_submit - t_begin_);
  VKS_VK_TRY(vkResetFences(ctx_.device(), 1, &fence_), "vkResetFences");
  VKS_VK_TRY(vkQueueSubmit(ctx_.queue(), 1, &si, fence_), "vkQueueSubmit");
  ++stats_.submits;
  ++stats_.fence_waits;
  in_flight_ = true;
  return ok();
}

result<void> recorder::wait() {
  if (!in_flight_) return ok();
  in_flight_ = false;
  const auto ns = [](auto d) { return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()); };
  const auto t_wait = std::chrono::steady_clock::now();
  VKS_VK_TRY(vkWaitForFences(ctx_.device(), 1, &fence_, VK_TRUE, k_fence_timeout_ns), "vkWaitForFences");
  stats_.wait_ns += ns(std::chrono::steady_clock::now() - t_wait);
  if (profile_) collect_profile(static_cast<uint32_t>(ops_.size()));
  if (log_shapes_) {
    const auto uploads = static_cast<uint64_t>(std::count_if(ops_.begin(), ops_.end(), [](const op& o) { return o.kind == 1; }));
    ++shape_runs_[{stats_.dispatches, stats_.barriers, uploads, stats_.bytes_moved}];
  }
  ops_.clear();
  pending_.clear();
  staged_.clear();
  return ok();
}

void recorder::collect_profile(uint32_t n_ops) {
  std::vector<uint64_t> ts(n_ops + 1);
  if (vkGetQueryPoolResults(ctx_.device(), queries_, 0, n_ops + 1, ts.size() * 8, ts.data(), 8,
                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS)
    return;
  for (uint32_t i = 0; i < n_ops; ++i) {
    const std::string name = ops_[i].kind == 1   ? std::string("upload")
                             : ops_[i].kind == 2 ? std::string("read-back")
                                                 : std::string(pipes_.name(ops_[i].pipe));
    auto& e = prof_[name];
    e.first += static_cast<double>(ts[i + 1] - ts[i]) * ctx_.caps().timestamp_period_ns;
    e.second += 1;
  }
}

result<void> recorder::copy_now(VkBuffer src, uint64_t src_off, VkBuffer dst, uint64_t dst_off, uint64_t n) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  VKS_VK_TRY(vkAllocateCommandBuffers(ctx_.device(), &ai, &cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(cb, &bi);
  const VkBufferCopy region{src_off, dst_off, n};
  vkCmdCopyBuffer(cb, src, dst, 1, &region);
  vkEndCommandBuffer(cb);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  VkResult r = vkResetFences(ctx_.device(), 1, &fence_);
  if (r == VK_SUCCESS) r = vkQueueSubmit(ctx_.queue(), 1, &si, fence_);
  if (r == VK_SUCCESS) ++stats_.submits, ++stats_.fence_waits;
  if (r == VK_SUCCESS) r = vkWaitForFences(ctx_.device(), 1, &fence_, VK_TRUE, k_fence_timeout_ns);
  vkFreeCommandBuffers(ctx_.device(), pool_, 1, &cb);
  if (r != VK_SUCCESS) return vk_fail(r, "copy");
  return ok();
}

}  // namespace vks::gpu::vk
