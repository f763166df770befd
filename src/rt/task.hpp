// task<T>: the one coroutine type of vkserve. Lazy (the body starts when the task is
// awaited), single-owner (move-only; destroying an un-awaited task destroys its frame),
// symmetric transfer on completion (a chain of synchronous co_awaits never grows the stack).
// An exception escaping the body is rethrown in the awaiter. result<T> is just a T here.
// Thread-safety: a task is resumed by one thread at a time; it may move between threads only
// through loop::post / channel (which hand the resumption to the target loop).
// Frames come from a small per-thread cache (frames.cpp): a request creates and destroys
// several tasks, and the cache makes each frame a pop and a push instead of malloc/free.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "base/assert.hpp"

namespace vks::rt {

template <class T = void>
class task;

namespace detail {

// Resumes the awaiting coroutine (symmetric transfer) or returns to whoever resumed us.
struct final_awaiter {
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) const noexcept {
    auto cont = h.promise().continuation;
    return cont ? cont : std::noop_coroutine();
  }
  void await_resume() const noexcept {}
};

// Coroutine frame storage for task (frames.cpp); frame_free gets the size frame_alloc got.
void* frame_alloc(std::size_t n);
void frame_free(void* p, std::size_t n) noexcept;

struct promise_base {
  static void* operator new(std::size_t n) { return frame_alloc(n); }
  static void operator delete(void* p, std::size_t n) noexcept { frame_free(p, n); }

  std::coroutine_handle<> continuation;  // who co_awaited us; null until awaited
  std::exception_ptr error;
  std::suspend_always initial_suspend() const noexcept { return {}; }
  final_awaiter final_suspend() const noexcept { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <class T>
struct task_promise : promise_base {
  std::optional<T> value;
  task<T> get_return_object() noexcept;
  template <class U = T>
    requires std::is_convertible_v<U&&, T>
  void return_value(U&& v) { value.emplace(std::forward<U>(v)); }
  T take() {
    if (error) std::rethrow_exception(error);
    VKS_ASSERT(value.has_value(), "task finished without a value");
    return std::move(*value);
  }
};

template <>
struct task_promise<void> : promise_base {
  task<void> get_return_object() noexcept;
  void return_void() const noexcept {}
  void take() const {
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace detail

template <class T>
class [[nodiscard]] task {
 public:
  using promise_type = detail::task_promise<T>;
  using handle_type = std::coroutine_handle<promise_type>;

  task() noexcept = default;
  explicit task(handle_type h) noexcept : h_(h) {}
  task(task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  task& operator=(task&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() { reset(); }

  // True when this task owns a coroutine (default-constructed and moved-from tasks do not).
  bool valid() const noexcept { return static_cast<bool>(h_); }

  // co_await starts the body (first and only time) and yields its value or rethrows.
  auto operator co_await() && noexcept {
    struct awaiter {
      handle_type h;
      bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<> cont) noexcept {
        h.promise().continuation = cont;
        return h;
      }
      T await_resume() { return h.promise().take(); }
    };
    VKS_ASSERT(h_ && !h_.done(), "awaiting an empty or finished task");
    return awaiter{h_};
  }

  // Low-level: give up ownership of the frame (used by scope and sync_wait).
  handle_type release() noexcept { return std::exchange(h_, {}); }

 private:
  void reset() noexcept {
    if (h_) h_.destroy();
    h_ = {};
  }
  handle_type h_;
};

namespace detail {
template <class T>
task<T> task_promise<T>::get_return_object() noexcept {
  return task<T>{std::coroutine_handle<task_promise<T>>::from_promise(*this)};
}
inline task<void> task_promise<void>::get_return_object() noexcept {
  return task<void>{std::coroutine_handle<task_promise<void>>::from_promise(*this)};
}

// The driver coroutine of sync_wait: eager, signals an atomic flag when the task is done.
struct sync_driver {
  struct promise_type {
    std::atomic<bool>* done = nullptr;
    sync_driver get_return_object() noexcept {
      return sync_driver{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    auto final_suspend() const noexcept {
      struct notify {
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<promise_type> h) const noexcept {
          auto* flag = h.promise().done;
          flag->store(true, std::memory_order_release);
          flag->notify_all();
        }
        void await_resume() const noexcept {}
      };
      return notify{};
    }
    void return_void() const noexcept {}
    void unhandled_exception() const noexcept { std::terminate(); }  // body catches all
  };
  std::coroutine_handle<promise_type> h;
};

template <class T>
sync_driver sync_drive(task<T>& t, std::optional<T>& out, std::exception_ptr& err) {
  try {
    out.emplace(co_await std::move(t));
  } catch (...) {
    err = std::current_exception();
  }
}
inline sync_driver sync_drive(task<void>& t, std::exception_ptr& err) {
  try {
    co_await std::move(t);
  } catch (...) {
    err = std::current_exception();
  }
}
}  // namespace detail

// Runs `t` to completion on the calling thread and returns its value (or rethrows).
// Blocks (std::atomic::wait, no spinning) while the task is suspended, so the task may be
// resumed by another thread (e.g. it awaits something another thread completes). It must
// NOT await loop I/O of a loop that this thread is supposed to run: use loop::run for that.
template <class T>
T sync_wait(task<T> t) {
  std::atomic<bool> done{false};
  std::exception_ptr err;
  if constexpr (std::is_void_v<T>) {
    auto d = detail::sync_drive(t, err);
    d.h.promise().done = &done;
    d.h.resume();
    done.wait(false, std::memory_order_acquire);
    d.h.destroy();
    if (err) std::rethrow_exception(err);
  } else {
    std::optional<T> out;
    auto d = detail::sync_drive(t, out, err);
    d.h.promise().done = &done;
    d.h.resume();
    done.wait(false, std::memory_order_acquire);
    d.h.destroy();
    if (err) std::rethrow_exception(err);
    return std::move(*out);
  }
}

}  // namespace vks::rt
