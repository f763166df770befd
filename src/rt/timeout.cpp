// deadline: a loop timer whose firing requests stop on the deadline's own stop_source.
// Re-arming later only moves due_; the timer, when it fires before due_, re-inserts itself
// at due_ (see timeout.hpp).
#include "rt/timeout.hpp"

namespace vks::rt {

deadline::deadline(loop& lp, std::stop_token parent) : lp_(lp) {
  timer_.owner = this;
  timer_.fire = &deadline::on_fire;
  if (parent.stop_possible()) parent_cb_.emplace(parent, forward_stop{&stop_});
}

deadline::deadline(loop& lp, std::chrono::nanoseconds after, std::stop_token parent)
    : deadline(lp, std::move(parent)) {
  (void)reset(after);
}

deadline::~deadline() {
  lp_.remove_timer(timer_);
  parent_cb_.reset();
}

bool deadline::reset(std::chrono::nanoseconds after) {
  if (stop_.stop_requested()) return false;
  due_ = std::chrono::steady_clock::now() + after;
  armed_ = true;
  if (timer_.heap_index != SIZE_MAX) {
    if (timer_.when <= due_) return true;  // fires early and moves on (on_fire)
    lp_.remove_timer(timer_);
  }
  timer_.when = due_;
  lp_.add_timer(timer_);
  return true;
}

void deadline::on_fire(detail::timer_node* t) {
  deadline* self = static_cast<node*>(t)->owner;
  if (!self->armed_) return;  // disarmed since it was placed: it just leaves the heap
  if (self->due_ > std::chrono::steady_clock::now()) {  // re-armed later: move on
    self->timer_.when = self->due_;
    self->lp_.add_timer(self->timer_);
    return;
  }
  self->armed_ = false;
  self->expired_ = true;
  self->stop_.request_stop();  // runs the operations' cancel callbacks, on this thread
}

}  // namespace vks::rt
