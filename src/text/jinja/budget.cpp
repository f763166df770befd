// render_budget: step/byte/deadline accounting of one render and the thread-local pointer
// to the budget of the render in progress.
#include "text/jinja/budget.hpp"

#include <algorithm>
#include <string>

#include "text/jinja/value.hpp"

namespace vks::text::jinja {

namespace {
thread_local render_budget* t_current = nullptr;
constexpr std::uint64_t clock_every = 4096;  // steps between deadline checks

[[noreturn]] void exceeded(std::string what) {
  template_error e{"chat template exceeded its " + std::move(what)};
  e.budget = true;
  throw e;
}
}  // namespace

render_budget::render_budget(const render_limits& lim) : lim_(lim) {
  if (lim_.timeout_ms > 0) deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(lim_.timeout_ms);
  next_check_ = first_check();
}

render_budget::~render_budget() {
  // Clearing a namespace drops what it holds; values nested inside are bounded by
  // max_value_depth, and other namespaces stay alive in namespaces_ until their turn, so
  // destruction never recurses through a cycle.
  for (auto& ns : namespaces_) {
    std::vector<std::pair<value, value>> items;
    items.swap(ns->items);
  }
}

std::uint64_t render_budget::first_check() const noexcept {
  return std::min<std::uint64_t>(steps_ + clock_every, lim_.max_steps + 1);
}

void render_budget::check_slow() {
  if (steps_ > lim_.max_steps) exceeded("step budget (" + std::to_string(lim_.max_steps) + ")");
  if (lim_.timeout_ms > 0 && std::chrono::steady_clock::now() > deadline_)
    exceeded("time budget (" + std::to_string(lim_.timeout_ms) + " ms)");
  next_check_ = first_check();
}

void render_budget::charge(std::uint64_t n_bytes) {
  if (!charging_) return;
  if (n_bytes > lim_.max_bytes || bytes_ > lim_.max_bytes - n_bytes)
    exceeded("byte budget (" + std::to_string(lim_.max_bytes) + " bytes)");
  bytes_ += n_bytes;
  step(1 + n_bytes / 1024);  // creating bytes is work too
}

void render_budget::ensure_room(std::uint64_t n_bytes) const {
  if (n_bytes > lim_.max_bytes || bytes_ > lim_.max_bytes - n_bytes)
    exceeded("byte budget (" + std::to_string(lim_.max_bytes) + " bytes)");
}

render_budget* current_budget() noexcept { return t_current; }

budget_scope::budget_scope(render_budget& b) noexcept : prev_(t_current) { t_current = &b; }
budget_scope::~budget_scope() { t_current = prev_; }

int max_value_depth() noexcept {
  render_budget* b = t_current;
  return b ? b->limits().max_value_depth : render_limits{}.max_value_depth;
}

}  // namespace vks::text::jinja
