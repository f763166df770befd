// The dispatch funnel: every kernel launch and in-step upload of gpu/vk goes through
// recorder::dispatch / recorder::copy. Ops are kept as plain records during a step; submit()
// turns them into one command buffer (reused when the step's record list is byte-identical
// to a cached one: same kernels, bindings, push constants, grid and upload placements),
// submits once and waits on one fence; read-back copies (read_back) land in a host-visible
// buffer in the same submission. Barriers are inserted only before an op that touches
// a byte range written (or writes a range read) since the previous barrier. With `profile`,
// a timestamp follows each op and per-kernel totals are logged by the destructor, with the
// counters of each step shape (cached command buffer). Every step is counted (step_stats:
// dispatches, barriers, submits, fence waits, bytes) from begin() on. Overlapped recording
// (#19): launch() / wait() split submit() so that the next step can be recorded aside and
// parked while one runs (begin_aside, park, resume: below).
// Not thread-safe (engine thread).
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "gpu/backend.hpp"
#include "gpu/vk/context.hpp"
#include "gpu/vk/memory.hpp"
#include "gpu/vk/pipelines.hpp"

namespace vks::gpu::vk {

// A byte range of a VkBuffer that an op reads or writes (for hazard tracking).
struct access {
  VkBuffer buf = VK_NULL_HANDLE;
  uint64_t lo = 0, hi = 0;
  bool write = false;
};

class recorder {
 public:
  recorder(const context& ctx, pipelines& pipes, bool profile);
  ~recorder();
  recorder(const recorder&) = delete;
  recorder& operator=(const recorder&) = delete;
  result<void> init();

  void begin();
  // moved: the bytes the op reads and writes, for step_stats (0: the sum of acc's ranges).
  void dispatch(uint32_t pipeline, const binding_set& b, std::span<const access> acc, const void* push,
                uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz, uint64_t moved = 0);
  // Copies src (copied now) into dst at submit time, ordered with the ops around it.
  void copy(VkBuffer dst, uint64_t dst_off, std::span<const std::byte> src);
  // Copies n bytes of src at src_off into the host-visible read-back buffer at submit time,
  // after the ops recorded before it; returns their offset there (readback() after submit).
  uint64_t read_back(VkBuffer src, uint64_t src_off, uint64_t n);
  // launch() then wait().
  result<void> submit();
  // launch(): the step's command buffer (cached or encoded) submitted, not waited for.
  // wait(): its fence waited and the recording cleared. Between them, begin_aside() ..
  // park() record the next step aside (the in-flight step's state is set by and restored),
  // which resume() later takes up in patch mode: copy() then overwrites the staged bytes of
  // the parked step's next copy op (same dst, offset and size) and read_back() returns the
  // offset of its next read-back op (same source and size); nothing else may be recorded.
  result<void> launch();
  result<void> wait();
  void begin_aside();
  void park();
  bool resume();  // false: nothing parked
  void drop_parked();
  // Patch mode: every copy and read-back of the resumed step was repeated, and matched.
  bool patch_complete() const;
  // The read-back buffer's bytes, valid after submit() until the next begin().
  const std::byte* readback() const { return readback_.mapped(); }
  // One-off copy between buffers outside a step (staging for non-mappable memory).
  result<void> copy_now(VkBuffer src, uint64_t src_off, VkBuffer dst, uint64_t dst_off, uint64_t n);

  // Counters since begin() (the step being recorded, or the last one and what followed it).
  const step_stats& stats() const { return stats_; }
  void count_upload(uint64_t n) { stats_.bytes_uploaded += n; }
  void count_download(uint64_t n) { stats_.bytes_downloaded += n; }

  uint64_t n_reused() const { return n_reused_; }
  uint64_t n_recorded() const { return n_recorded_; }

 private:
  struct op {  // POD; zero-filled so memcmp compares it exactly
    uint32_t kind;  // 0 dispatch, 1 copy (staging -> dst), 2 read-back (src -> read-back buffer)
    uint32_t pipe;
    uint32_t barrier;
    uint32_t push_size;
    uint32_t groups[3];
    uint32_t pad;
    binding_set b;
    uint64_t src_off, dst_off, size;
    VkBuffer dst;
    VkBuffer src;
    uint8_t push[k_push_bytes];
  };
  struct cached_cb {
    std::vector<op> ops;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    uint64_t last_used = 0;
  };
  // One step's recording state (the in-flight step's while the next is recorded aside, or
  // a parked step's).
  struct step_state {
    std::vector<op> ops;
    std::vector<access> pending;
    std::vector<std::byte> staged;
    uint64_t readback_used = 0;
    step_stats stats;
    std::chrono::steady_clock::time_point t_begin;
  };
  void swap_state(step_state& s);
  size_t next_op(size_t from, uint32_t kind) const;
  void note_access(std::span<const access> acc, uint32_t& barrier);
  result<VkCommandBuffer> encode();
  void drop_cached();
  result<void> ensure_staging(uint64_t n);
  result<void> ensure_readback(uint64_t n);
  result<void> ensure_queries(uint32_t n);
  void collect_profile(uint32_t n_ops);
  void log_profile() const;

  const context& ctx_;
  pipelines& pipes_;
  bool profile_;
  bool log_shapes_;  // profile asked for (step shapes are counted without timestamps too)
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::vector<op> ops_;
  std::vector<access> pending_;  // accesses since the last barrier
  std::vector<std::byte> staged_;
  raw_buffer staging_;
  raw_buffer readback_;        // host-visible (cached where available): read-back ops land here
  uint64_t readback_used_ = 0;  // bytes of it claimed by this step's read-back ops
  std::vector<cached_cb> cache_;
  uint64_t tick_ = 0, n_reused_ = 0, n_recorded_ = 0;
  step_stats stats_;
  std::chrono::steady_clock::time_point t_begin_;  // begin(): record_ns counts from it
  step_state flight_, parked_;  // the in-flight step during begin_aside() .. park(); the parked one
  bool has_parked_ = false, patching_ = false, patch_bad_ = false, in_flight_ = false;
  size_t patch_copy_ = 0, patch_read_ = 0;  // patch mode: ops searched so far for copies / read-backs
  uint64_t parked_ns_ = 0;                  // host time the parked step's recording took
  // profile: steps run per shape (dispatches, barriers, uploads, bytes moved)
  std::map<std::array<uint64_t, 4>, uint64_t> shape_runs_;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  uint32_t n_queries_ = 0;
  std::map<std::string, std::pair<double, uint64_t>> prof_;  // kernel -> (total ns, count)
};

}  // namespace vks::gpu::vk
