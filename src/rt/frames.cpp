// Coroutine frame cache (see task.hpp, detail::frame_alloc): per thread, the frames freed
// most recently, by 64-byte size class up to 1 KiB, at most 64 per class. A request's
// frames are a handful of these sizes, allocated and freed in LIFO order, so nearly every
// frame comes from the cache. Bigger frames, and frees beyond the bound, go to operator
// new/delete. A frame freed on another thread joins that thread's cache. When a thread
// exits, its cache is emptied and later frees on it go to operator delete.
// ASan builds bypass the cache, so a use of a freed frame stays visible.
#include <cstddef>
#include <cstdint>
#include <new>

#include "rt/task.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define VKS_FRAME_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VKS_FRAME_CACHE 0
#endif
#endif
#ifndef VKS_FRAME_CACHE
#define VKS_FRAME_CACHE 1
#endif

namespace vks::rt::detail {

#if VKS_FRAME_CACHE
namespace {

constexpr std::size_t k_class_bytes = 64;
constexpr std::size_t k_n_classes = 16;  // frames up to 1 KiB
constexpr std::uint16_t k_max_per_class = 64;

struct free_frame {
  free_frame* next;
};

// Trivially destructible, so it stays usable while the thread's other thread_local
// objects are destroyed (they may free frames); `closed` is set by the drain guard.
struct frame_cache {
  free_frame* head[k_n_classes];
  std::uint16_t n[k_n_classes];
  bool guarded;  // the drain guard of this thread exists
  bool closed;   // the thread is exiting: cache nothing more
};
constinit thread_local frame_cache tl_cache{};

void drain(frame_cache& c) noexcept {
  for (std::size_t k = 0; k < k_n_classes; ++k) {
    while (free_frame* f = c.head[k]) {
      c.head[k] = f->next;
      ::operator delete(f, (k + 1) * k_class_bytes);
    }
    c.n[k] = 0;
  }
}

struct drain_guard {
  ~drain_guard() {
    tl_cache.closed = true;
    drain(tl_cache);
  }
};

void guard_thread() {
  thread_local drain_guard guard;  // constructed once per thread; its destructor drains
  (void)guard;
  tl_cache.guarded = true;
}

std::size_t class_of(std::size_t n) noexcept { return n == 0 ? 0 : (n - 1) / k_class_bytes; }

}  // namespace

void* frame_alloc(std::size_t n) {
  const std::size_t k = class_of(n);
  if (k >= k_n_classes) return ::operator new(n);
  frame_cache& c = tl_cache;
  if (free_frame* f = c.head[k]) {
    c.head[k] = f->next;
    --c.n[k];
    return f;
  }
  return ::operator new((k + 1) * k_class_bytes);
}

void frame_free(void* p, std::size_t n) noexcept {
  const std::size_t k = class_of(n);
  if (k >= k_n_classes) {
    ::operator delete(p, n);
    return;
  }
  frame_cache& c = tl_cache;
  if (c.closed || c.n[k] >= k_max_per_class) {
    ::operator delete(p, (k + 1) * k_class_bytes);
    return;
  }
  if (!c.guarded) guard_thread();
  auto* f = static_cast<free_frame*>(p);
  f->next = c.head[k];
  c.head[k] = f;
  ++c.n[k];
}

#else

void* frame_alloc(std::size_t n) { return ::operator new(n); }
void frame_free(void* p, std::size_t n) noexcept { ::operator delete(p, n); }

#endif

}  // namespace vks::rt::detail
