// Bounds of one template render: the limits (public, with defaults generous for every real
// chat template) and the budget that enforces them (steps, bytes created, value nesting,
// call depth, a wall-clock deadline). The budget of the render in progress is reachable
// from the engine's free functions through a thread-local pointer set for the render's
// duration. Not thread-safe: one budget belongs to one render on one thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace vks::text::jinja {

// Every render is bounded, trusted templates included. Defaults: the real chat templates
// of ../shared/models/chat-templates need < 1% of each (see tests/text/jinja).
struct render_limits {
  std::uint64_t max_steps = 10'000'000;        // expression evaluations, statements, loop
                                               // iterations, filter/method/macro calls, and
                                               // 1 per element or KiB walked by builtins
  std::uint64_t max_bytes = 64u << 20;         // bytes of every string/list/dict created and
                                               // of output appended, summed over the render
  std::size_t max_output_bytes = 64u << 20;    // rendered text
  int max_value_depth = 256;                   // list/dict/namespace nesting
  int max_call_depth = 64;                     // nested macro calls / caller()
  int max_recursion = 1024;                    // nested statements + expression evaluations
                                               // (~1 MiB of C++ stack in a release build)
  std::int64_t timeout_ms = 2000;              // wall clock per render; <= 0: none
  std::int64_t fixed_now = -1;                 // strftime_now epoch seconds (UTC); -1: clock
};

// What a render used (for measuring templates against the limits).
struct render_stats {
  std::uint64_t steps = 0;
  std::uint64_t bytes = 0;
};

struct object_data;

class render_budget {
 public:
  explicit render_budget(const render_limits& lim);
  ~render_budget();  // breaks namespace reference cycles (see track_namespace)
  render_budget(const render_budget&) = delete;
  render_budget& operator=(const render_budget&) = delete;

  const render_limits& limits() const noexcept { return lim_; }
  std::uint64_t steps() const noexcept { return steps_; }
  std::uint64_t bytes() const noexcept { return bytes_; }
  // Off while the request's own data becomes values (bounded by the request limits).
  void set_charging(bool on) noexcept { charging_ = on; }

  // Throws template_error (budget=true) when a budget is exceeded.
  void step(std::uint64_t n = 1) {
    steps_ += n;
    if (steps_ >= next_check_) check_slow();
  }
  void charge(std::uint64_t n_bytes);
  // Throws if `n_bytes` more would not fit (checks before building a large string).
  void ensure_room(std::uint64_t n_bytes) const;

  // Namespaces are the only values mutated after creation, so the only way to make a
  // reference cycle; the budget keeps them and clears them at the end of the render.
  void track_namespace(std::shared_ptr<object_data> ns) { namespaces_.push_back(std::move(ns)); }

 private:
  std::uint64_t first_check() const noexcept;
  void check_slow();

  const render_limits& lim_;
  std::uint64_t steps_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t next_check_ = 0;
  bool charging_ = true;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<std::shared_ptr<object_data>> namespaces_;
};

// The budget of the render running on this thread (null outside a render: parsing and
// values built outside a render are not charged).
render_budget* current_budget() noexcept;

// Installs `b` as this thread's current budget for the scope's lifetime.
class budget_scope {
 public:
  explicit budget_scope(render_budget& b) noexcept;
  ~budget_scope();
  budget_scope(const budget_scope&) = delete;
  budget_scope& operator=(const budget_scope&) = delete;

 private:
  render_budget* prev_;
};

// Free-function shorthands on the current budget (no-ops outside a render).
inline void charge_steps(std::uint64_t n = 1) {
  if (render_budget* b = current_budget()) b->step(n);
}
inline void charge_bytes(std::uint64_t n) {
  if (render_budget* b = current_budget()) b->charge(n);
}
inline void ensure_room(std::uint64_t n) {
  if (render_budget* b = current_budget()) b->ensure_room(n);
}
// Steps for walking `n_bytes` of text: one per KiB.
inline void charge_scan(std::size_t n_bytes) { charge_steps(1 + n_bytes / 1024); }
int max_value_depth() noexcept;

}  // namespace vks::text::jinja
