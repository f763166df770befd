// ws_connection (see websocket.hpp). Coordination is by flags and parked coroutine handles,
// all on the loop thread; a parked coroutine is always resumed through loop::post_resume
// (never inline) and re-checks its condition, so wake-ups may be spurious but never lost.
// Write ownership (writing_) passes from writer to writer in FIFO order; urgent frames
// (pong, close) are sent by whoever owns the socket, right after its current write.
#include "http/websocket.hpp"

#include <algorithm>
#include <exception>
#include <span>
#include <vector>

#include "base/log.hpp"
#include "base/log_throttle.hpp"
#include "rt/io.hpp"
#include "rt/scope.hpp"
#include "http/ws_handshake.hpp"
#include "rt/timeout.hpp"

namespace vks::http {

// Suspends until wake(slot); a named local at each co_await (GCC 12 and temporaries).
struct ws_connection::park {
  std::coroutine_handle<>& slot;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) noexcept { slot = h; }
  void await_resume() const noexcept {}
};

namespace {
struct queue_park {
  std::deque<std::coroutine_handle<>>& queue;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { queue.push_back(h); }
  void await_resume() const noexcept {}
};
}  // namespace

struct ws_connection::stop_all {
  std::stop_source* src;
  void operator()() const noexcept { src->request_stop(); }
};

struct ws_connection::wake_receiver {
  ws_connection* c;
  void operator()() const noexcept {
    c->closing_.request_stop();
    c->wake(c->receiver_);
    c->wake(c->reader_);
  }
};

ws_connection::ws_connection(rt::loop& lp, int fd, ws_options opts, std::string buffered,
                             std::stop_token disconnected, std::stop_token draining)
    : lp_(lp), fd_(fd), opts_(opts), parser_(ws_role::server, ws_parser_limits{opts.max_message_bytes}),
      rbuf_(std::move(buffered)), disconnected_(std::move(disconnected)), draining_(std::move(draining)),
      charge_(opts.budget), last_activity_(std::chrono::steady_clock::now()) {}

ws_connection::~ws_connection() {
  VKS_ASSERT(!receiver_ && !reader_ && write_waiters_.empty(), "ws_connection destroyed with parked coroutines");
}

void ws_connection::wake(std::coroutine_handle<>& slot) {
  if (slot) lp_.post_resume(std::exchange(slot, {}));
}

rt::task<void> ws_connection::run(app_fn app) {
  struct on_drain_fn {
    ws_connection* c;
    void operator()() const noexcept { c->wake(c->receiver_); }
  };
  std::stop_callback<stop_all> on_abort(disconnected_, stop_all{&stop_});
  std::stop_callback<wake_receiver> on_stop(stop_.get_token(), wake_receiver{this});
  std::stop_callback<on_drain_fn> on_drain(draining_, on_drain_fn{this});
  rt::scope reader;
  reader.spawn(read_loop());
  bool app_failed = false;
  try {
    co_await app(*this);
  } catch (const std::exception& e) {
    log::error("websocket: application failed: {}", e.what());
    app_failed = true;
  }
  app_done_ = true;
  wake(reader_);
  if (app_failed) co_await close(ws_status::internal_error, "internal error");
  if (draining_.stop_requested()) co_await close(ws_status::going_away, "server shutting down");
  co_await close(ws_status::normal, "");
  rt::scope timer;
  std::stop_source timer_stop;
  timer.spawn(close_timer(timer_stop.get_token()));
  co_await reader.join();
  timer_stop.request_stop();
  co_await timer.join();
  // The reader may have handed a final flush to a writer still in flight: let it finish.
  while (writing_) {
    queue_park w{write_waiters_};
    co_await w;
  }
  closing_.request_stop();
}

// After we sent close: the peer has close_timeout to answer before the socket is dropped.
rt::task<void> ws_connection::close_timer(std::stop_token stop) {
  auto r = co_await rt::sleep_for(lp_, opts_.close_timeout, stop);
  if (r) stop_.request_stop();
}

// Charges the budget with the partial message and the queued ones; false when refused.
bool ws_connection::charge_buffered() { return charge_.charge_to(parser_.n_message_bytes() + n_inbox_bytes_); }

// How long the next receive may wait: until the idle timeout (from the last activity) or the
// assembly timeout (from the start of the partial message), whichever is first; `assembly`
// says which. Zero: no limit.
std::chrono::milliseconds ws_connection::next_wait(std::chrono::steady_clock::time_point now, bool& assembly) const {
  using std::chrono::milliseconds;
  std::optional<std::chrono::steady_clock::time_point> until;
  assembly = false;
  if (opts_.idle_timeout.count() > 0) until = last_activity_ + opts_.idle_timeout;
  if (assembly_start_ && opts_.assembly_timeout.count() > 0) {
    auto t = *assembly_start_ + opts_.assembly_timeout;
    if (!until || t <= *until) {
      until = t;
      assembly = true;
    }
  }
  if (!until) return milliseconds(0);
  return std::max(milliseconds(1), std::chrono::ceil<milliseconds>(*until - now));
}

rt::task<void> ws_connection::read_loop() {
  std::vector<char> buf(opts_.read_buffer_bytes);
  std::string_view pending = rbuf_;
  for (bool go_on = true; go_on;) {
    while (go_on && !pending.empty()) {
      auto r = parser_.feed(pending);
      pending.remove_prefix(r.n_consumed);
      if (r.event.kind == ws_event_kind::message) assembly_start_.reset();
      if (r.event.kind != ws_event_kind::none) go_on = co_await on_event(std::move(r.event));
    }
    if (!go_on) break;
    const auto now = std::chrono::steady_clock::now();
    if (!parser_.partial()) assembly_start_.reset();
    else if (!assembly_start_) assembly_start_ = now;
    if (!charge_buffered() && !close_queued_) {
      thread_local log_throttle warnings{std::chrono::seconds(10)};
      if (warnings.allow(now)) log::warn("websocket: closing: buffered request bytes are over their budget");
      queue_close(ws_status::try_again_later, "server busy: too much request data buffered");
      co_await flush_urgent();
      break;
    }
    result<std::size_t> n = fail(errc::internal, "unset");
    auto space = std::as_writable_bytes(std::span(buf));
    bool assembly = false;
    const auto wait = next_wait(now, assembly);
    bool expired = false;
    if (wait.count() > 0) {
      rt::deadline dl(lp_, wait, stop_.get_token());
      n = co_await rt::recv_some(lp_, fd_, space, dl.token());
      expired = dl.expired() && !n;
    } else {
      n = co_await rt::recv_some(lp_, fd_, space, stop_.get_token());
    }
    if (expired && !assembly && std::chrono::steady_clock::now() < last_activity_ + opts_.idle_timeout)
      continue;  // frames were sent meanwhile: not idle
    if (expired && !close_queued_) {
      if (assembly) {
        const auto s = std::chrono::duration_cast<std::chrono::seconds>(opts_.assembly_timeout).count();
        queue_close(ws_status::policy_violation, "message not completed within " + std::to_string(s) + " s");
      } else {
        queue_close(ws_status::going_away, "idle timeout");
      }
      co_await flush_urgent();
      break;
    }
    if (n && *n > 0) last_activity_ = std::chrono::steady_clock::now();
    if (!n || *n == 0) {
      if (peer_close_code_ == 0) peer_close_code_ = ws_status::abnormal;
      break;
    }
    pending = std::string_view(buf.data(), *n);
  }
  rbuf_.clear();
  reader_done_ = true;
  closing_.request_stop();
  wake(receiver_);
}

// Returns whether to keep reading.
rt::task<bool> ws_connection::on_event(ws_event ev) {
  switch (ev.kind) {
    case ws_event_kind::message:
      if (close_queued_ || app_done_) co_return true;  // waiting for the close reply: drop
      n_inbox_bytes_ += ev.payload.size();
      inbox_.push_back(ws_message{ev.opcode == ws_opcode::binary, std::move(ev.payload)});
      wake(receiver_);
      while (inbox_.size() >= opts_.max_queued_messages && !app_done_ && !stop_.stop_requested()) {
        park p{reader_};
        co_await p;
      }
      co_return !stop_.stop_requested();
    case ws_event_kind::ping:
      if (!close_queued_) {
        pending_pong_ = std::move(ev.payload);
        co_await flush_urgent();
      }
      co_return !failed_;
    case ws_event_kind::pong:
    case ws_event_kind::none:
      co_return true;
    case ws_event_kind::close:
      peer_close_code_ = ev.code;
      // Echo the peer's code (RFC 6455 5.5.1); an empty close is answered with an empty one.
      queue_close(ev.code, "");
      co_await flush_urgent();
      co_return false;
    case ws_event_kind::error:
      log::debug("websocket: closing with {}: {}", ev.code, ev.payload);
      queue_close(ev.code, ev.payload);
      co_await flush_urgent();
      co_return false;
  }
  co_return false;
}

rt::task<std::optional<ws_message>> ws_connection::receive() {
  for (;;) {
    if (!inbox_.empty()) {
      std::optional<ws_message> m(std::move(inbox_.front()));
      inbox_.pop_front();
      n_inbox_bytes_ -= m->data.size();
      (void)charge_buffered();  // lowers the charge
      wake(reader_);
      co_return m;
    }
    if (reader_done_ || close_queued_ || draining_.stop_requested() || closing_.stop_requested())
      co_return std::nullopt;
    park p{receiver_};
    co_await p;
  }
}

rt::task<result<void>> ws_connection::send_text(std::string_view payload) {
  co_return co_await send_data(ws_opcode::text, payload);
}

rt::task<result<void>> ws_connection::send_binary(std::string_view payload) {
  co_return co_await send_data(ws_opcode::binary, payload);
}

rt::task<void> ws_connection::close(std::uint16_t code, std::string_view reason) {
  if (close_queued_) co_return;
  queue_close(code, reason);
  co_await flush_urgent();
}

void ws_connection::queue_close(std::uint16_t code, std::string_view reason) {
  if (close_queued_) return;
  close_queued_ = true;
  sent_close_code_ = code;
  append_ws_close(pending_close_, code, reason);
}

std::string ws_connection::take_urgent() {
  std::string out;
  if (pending_pong_) {
    append_ws_frame(out, ws_opcode::pong, *pending_pong_);
    pending_pong_.reset();
  }
  out += pending_close_;
  pending_close_.clear();
  return out;
}

rt::task<result<void>> ws_connection::send_data(ws_opcode op, std::string_view payload) {
  std::string frame;
  append_ws_frame(frame, op, payload);
  while (writing_ && !close_queued_ && !failed_) {
    queue_park w{write_waiters_};
    co_await w;
  }
  if (close_queued_ || failed_) {
    if (!writing_ && !write_waiters_.empty()) {
      lp_.post_resume(write_waiters_.front());  // pass the turn on
      write_waiters_.pop_front();
    }
    co_return fail(errc::io, "websocket is closing");
  }
  writing_ = true;
  std::string bytes = take_urgent();
  bytes += frame;
  co_return co_await write_locked(std::move(bytes));
}

rt::task<void> ws_connection::flush_urgent() {
  if (writing_ || failed_) co_return;  // the writer in flight sends urgent frames next
  writing_ = true;
  (void)co_await write_locked(take_urgent());
}

// Owns the socket (writing_ set by the caller): writes `bytes`, then any urgent frames that
// were queued meanwhile, then hands the socket to the next waiter.
rt::task<result<void>> ws_connection::write_locked(std::string bytes) {
  result<void> r;
  while (!bytes.empty() && !failed_) {
    rt::deadline dl(lp_, opts_.send_timeout, stop_.get_token());
    auto data = std::as_bytes(std::span(bytes.data(), bytes.size()));
    r = rt::map_timeout(co_await rt::send_all(lp_, fd_, data, dl.token()), dl);
    last_activity_ = std::chrono::steady_clock::now();
    if (!r) {
      failed_ = true;
      stop_.request_stop();
      break;
    }
    bytes = take_urgent();
  }
  if (failed_ && r) r = fail(errc::io, "websocket connection failed");
  writing_ = false;
  if (!write_waiters_.empty()) {
    lp_.post_resume(write_waiters_.front());
    write_waiters_.pop_front();
  }
  co_return r;
}

rt::task<void> accept_websocket(const request& req, response_writer& w, ws_options opts,
                                ws_connection::app_fn app, std::string_view protocol) {
  ws_handshake hs = check_ws_handshake(req);
  if (!hs.accept) {
    w.close_after();
    (void)co_await w.send(std::move(hs.reject));
    co_return;
  }
  if (!protocol.empty()) hs.accept->add("Sec-WebSocket-Protocol", std::string(protocol));
  auto sock = co_await w.upgrade(std::move(*hs.accept));
  if (!sock) co_return;
  ws_connection conn(*sock->lp, sock->fd, opts, std::move(sock->buffered), sock->disconnected, sock->draining);
  co_await conn.run(std::move(app));
}

}  // namespace vks::http
