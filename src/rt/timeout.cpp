// deadline: a loop timer whose firing requests stop on the deadline's own stop_source.
#include "rt/timeout.hpp"

namespace vks::rt {

deadline::deadline(loop& lp, std::chrono::nanoseconds after, std::stop_token parent) : lp_(lp) {
  timer_.owner = this;
  timer_.fire = &deadline::on_fire;
  if (parent.stop_possible()) parent_cb_.emplace(parent, forward_stop{&stop_});
  if (!stop_.stop_requested()) {
    timer_.when = std::chrono::steady_clock::now() + after;
    lp_.add_timer(timer_);
  }
}

deadline::~deadline() {
  lp_.remove_timer(timer_);
  parent_cb_.reset();
}

bool deadline::reset(std::chrono::nanoseconds after) {
  if (stop_.stop_requested()) return false;
  lp_.remove_timer(timer_);
  timer_.when = std::chrono::steady_clock::now() + after;
  lp_.add_timer(timer_);
  return true;
}

void deadline::on_fire(detail::timer_node* t) {
  deadline* self = static_cast<node*>(t)->owner;
  self->expired_ = true;
  self->stop_.request_stop();  // runs the operations' cancel callbacks, on this thread
}

}  // namespace vks::rt
