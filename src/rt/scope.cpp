// scope: children run in a wrapper coroutine that reports to the scope when it finishes and
// frees its own frame; the last child to finish resumes the joiner by symmetric transfer.
#include "rt/scope.hpp"

namespace vks::rt {
namespace {

struct child {
  struct promise_type {
    scope* owner = nullptr;
    std::exception_ptr error;
    child get_return_object() noexcept {
      return child{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    auto final_suspend() const noexcept {
      struct finish {
        bool await_ready() const noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
          scope* s = h.promise().owner;
          std::exception_ptr e = std::move(h.promise().error);
          h.destroy();
          return s->on_child_done(std::move(e));
        }
        void await_resume() const noexcept {}
      };
      return finish{};
    }
    void return_void() const noexcept {}
    void unhandled_exception() noexcept { error = std::current_exception(); }
  };
  std::coroutine_handle<promise_type> h;
};

child run_child(task<void> t) { co_await std::move(t); }

}  // namespace

scope::~scope() { VKS_ASSERT(n_live_ == 0, "scope destroyed with live children (join first)"); }

void scope::spawn(task<void> t) {
  VKS_ASSERT(t.valid(), "spawning an empty task");
  child c = run_child(std::move(t));
  c.h.promise().owner = this;
  ++n_live_;
  c.h.resume();
}

std::coroutine_handle<> scope::on_child_done(std::exception_ptr e) noexcept {
  if (e && !first_error_) first_error_ = std::move(e);
  VKS_ASSERT(n_live_ > 0, "scope child count underflow");
  if (--n_live_ == 0 && joiner_) return std::exchange(joiner_, {});
  return std::noop_coroutine();
}

task<void> scope::join() {
  struct wait_all {
    scope* s;
    bool await_ready() const noexcept { return s->n_live_ == 0; }
    void await_suspend(std::coroutine_handle<> h) noexcept {
      VKS_ASSERT(!s->joiner_, "scope has a joiner already");
      s->joiner_ = h;
    }
    void await_resume() const noexcept {}
  };
  co_await wait_all{this};
  if (first_error_) std::rethrow_exception(std::exchange(first_error_, {}));
}

}  // namespace vks::rt
