// deadline: bounds operations in time. A deadline owns a stop_source whose token() is
// stopped when the duration has elapsed (timer on the loop), when the optional parent
// token is stopped, or by cancel(). Pass token() to rt operations; a stopped operation
// yields errc::cancelled, and map_timeout() turns that into errc::timeout when the deadline
// itself expired. Loop thread only; not movable (the loop's timer heap points at it).
//   rt::deadline dl(lp, 30s, conn_stop);
//   auto n = rt::map_timeout(co_await rt::recv_some(lp, fd, buf, dl.token()), dl);
// A deadline can also be kept and re-armed for one use after another (a connection's
// keep-alive, request and send timeouts): reset() to arm, disarm() between uses. Re-arming
// to a later time touches nothing but the deadline: its loop timer stays where it is and,
// when it comes due early, moves itself on to the real expiry. So a kept deadline costs no
// allocation, no stop-callback registration and no timer-heap operation per use.
#pragma once

#include <chrono>
#include <optional>
#include <stop_token>

#include "base/result.hpp"
#include "rt/loop.hpp"

namespace vks::rt {

class deadline {
 public:
  // Armed: expires `after` from now (unless the parent is already stopped).
  deadline(loop& lp, std::chrono::nanoseconds after, std::stop_token parent = {});
  // Not armed: arm it with reset().
  explicit deadline(loop& lp, std::stop_token parent = {});
  ~deadline();  // disarms the timer; never requests stop
  deadline(const deadline&) = delete;
  deadline& operator=(const deadline&) = delete;

  std::stop_token token() const noexcept { return stop_.get_token(); }
  // True once the timer fired (not when the parent stopped or cancel() was called).
  bool expired() const noexcept { return expired_; }
  bool stop_requested() const noexcept { return stop_.stop_requested(); }

  // Arms (or re-arms) the timer to expire `after` from now, replacing any earlier setting.
  // Returns false (and does nothing) when the token is already stopped: a stop_source
  // cannot be un-stopped; make a new deadline.
  bool reset(std::chrono::nanoseconds after);
  // The timer will not expire until the next reset(); token() is not affected.
  void disarm() noexcept { armed_ = false; }
  // Stops token() now (without marking expired()).
  void cancel() noexcept { stop_.request_stop(); }

 private:
  struct forward_stop {
    std::stop_source* src;
    void operator()() const noexcept { src->request_stop(); }
  };
  static void on_fire(detail::timer_node* t);

  struct node : detail::timer_node {
    deadline* owner = nullptr;
  };
  // timer_.when is the timer's place in the loop's heap; due_ the expiry it stands for
  // (never earlier than timer_.when while the timer is in the heap).
  node timer_;
  loop& lp_;
  std::chrono::steady_clock::time_point due_{};
  bool armed_ = false;  // due_ counts; when false a firing timer just leaves the heap
  bool expired_ = false;
  std::stop_source stop_;
  std::optional<std::stop_callback<forward_stop>> parent_cb_;
};

// Maps errc::cancelled to errc::timeout when `dl` expired; passes everything else through.
template <class T>
result<T> map_timeout(result<T> r, const deadline& dl) {
  if (!r.ok() && r.error().code == errc::cancelled && dl.expired())
    return fail(errc::timeout, "deadline passed");
  return r;
}

}  // namespace vks::rt
