// The connection coroutine (see server.hpp). Phases per request: wait idle for the first
// byte (idle timeout; drain closes here), read the head (header timeout, from the first
// byte), read the body (body timeout, from the end of the head), dispatch, answer. The
// parser consumes the read buffer completely except after a complete request, so pipelined
// bytes stay in the buffer and are parsed next, in order.
// Per-request costs are kept low on purpose (a keep-alive connection may carry millions
// of requests): the connection's deadlines, disconnect source and output buffer live as
// long as it does and are re-armed or reused for each request.
// Memory: a request's body is charged to the process-wide budget (opts.budget) from its head
// (Content-Length reserved) or as it grows (chunked) until its handler returns; a body that
// does not fit is answered 503 + Retry-After before it is read, and the connection closes.
#include <charconv>
#include <sys/socket.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "base/log_throttle.hpp"
#include "http/errors.hpp"
#include "http/server.hpp"
#include "rt/io.hpp"
#include "rt/net.hpp"
#include "rt/scope.hpp"
#include "rt/timeout.hpp"

namespace vks::http {

namespace {

enum class read_status { data, eof, timeout, cancelled, error };

struct forward_stop {
  std::stop_source* src;
  void operator()() const noexcept { src->request_stop(); }
};

class connection {
 public:
  connection(rt::loop& lp, int fd, const router& routes, const server_options& opts, std::stop_token drain,
             std::stop_token abort)
      : lp_(lp), fd_(fd), routes_(routes), opts_(opts), drain_(std::move(drain)), abort_(std::move(abort)),
        parser_(opts.limits), buf_(opts.read_buffer_bytes), on_abort_(abort_, forward_stop{&disconnect_}),
        idle_dl_(lp, drain_), request_dl_(lp, abort_), send_dl_(lp, disconnect_.get_token()),
        write_ctx_{lp, fd, disconnect_.get_token(), drain_, send_dl_, opts.send_timeout, out_},
        body_charge_(opts.budget) {}

  rt::task<void> run();

 private:
  rt::task<read_status> read_more();
  rt::task<bool> on_head_ready();
  rt::task<bool> handle(request& req);
  void start_watch();
  rt::task<void> watch_peer(std::stop_token stop);
  rt::task<void> send_error(int status, std::string message, bool retry_after = false);
  rt::task<void> send_over_budget();
  rt::task<void> linger_close();

  void compact() {
    if (beg_ == end_) beg_ = end_ = 0;
  }

  rt::loop& lp_;
  int fd_;
  const router& routes_;
  const server_options& opts_;
  std::stop_token drain_;
  std::stop_token abort_;
  request_parser parser_;
  std::vector<char> buf_;
  std::size_t beg_ = 0;  // unparsed bytes are buf_[beg_, end_)
  std::size_t end_ = 0;
  bool peer_closed_ = false;
  // Each of these ends the connection once stopped, so one per connection suffices.
  std::stop_source disconnect_;                // peer gone or server abort: handlers' disconnected()
  std::stop_callback<forward_stop> on_abort_;  // abort_ -> disconnect_
  rt::deadline idle_dl_;     // keep-alive wait for a request's first byte; parent drain_
  rt::deadline request_dl_;  // header, then body timeout; parent abort_
  rt::deadline send_dl_;     // each response write; parent disconnect_
  std::string out_;          // response bytes (write_ctx_); capacity kept up to k_keep_out_bytes
  write_context write_ctx_;  // lent to each request's response_writer
  rt::scope watch_;          // watch_peer, while a handler that asked for it runs
  std::optional<std::stop_source> watch_stop_;  // engaged while watch_peer may run
  budget_charge body_charge_;  // the current request's body bytes in opts_.budget
};

// The request's Content-Length (0 when absent, e.g. chunked; llhttp validated the digits).
std::size_t content_length(const request& req) {
  const std::string* v = req.header("content-length");
  std::size_t n = 0;
  if (v) (void)std::from_chars(v->data(), v->data() + v->size(), n);
  return n;
}

// A larger output buffer is released after its response (a big reply should not pin
// memory on an idle keep-alive connection).
constexpr std::size_t k_keep_out_bytes = 4096;

rt::task<read_status> connection::read_more() {
  compact();
  if (end_ == buf_.size()) co_return read_status::error;  // cannot happen: parser drains the buffer
  auto space = std::as_writable_bytes(std::span(buf_.data() + end_, buf_.size() - end_));
  // Between requests the idle timeout bounds the wait; within one, the request deadline.
  const bool idle = !parser_.started();
  rt::deadline& dl = idle ? idle_dl_ : request_dl_;
  if (idle) (void)idle_dl_.reset(opts_.idle_timeout);  // refused once stopped: the recv is cancelled
  auto n = co_await rt::recv_some(lp_, fd_, space, dl.token());
  if (idle) idle_dl_.disarm();
  if (!n) {
    if (n.error().code != errc::cancelled) co_return read_status::error;
    co_return dl.expired() ? read_status::timeout : read_status::cancelled;
  }
  if (*n == 0) co_return read_status::eof;
  end_ += *n;
  co_return read_status::data;
}

rt::task<void> connection::run() {
  for (;;) {
    while (beg_ < end_) {
      bool was_started = parser_.started();
      auto step = parser_.feed(std::string_view(buf_.data() + beg_, end_ - beg_));
      beg_ += step.n_consumed;
      if (!was_started && parser_.started()) (void)request_dl_.reset(opts_.header_timeout);
      if (step.state == parse_state::error) {
        co_await send_error(parser_.error_status(), parser_.error_message());
        co_return;
      }
      // Chunked bodies are charged as they grow (a Content-Length was reserved at the head).
      if (const std::size_t n = parser_.current().body.size(); n > body_charge_.n_charged() && !body_charge_.charge_to(n)) {
        co_await send_over_budget();
        co_return;
      }
      if (step.state == parse_state::head_ready) {
        if (!co_await on_head_ready()) co_return;
      } else if (step.state == parse_state::complete) {
        request_dl_.disarm();
        request req = parser_.take();
        const bool go_on = co_await handle(req);
        body_charge_.release();
        if (!go_on) co_return;
        parser_.recycle(std::move(req));
        if (beg_ == end_ && buf_.size() > opts_.read_buffer_bytes) {
          buf_ = std::vector<char>(opts_.read_buffer_bytes);
          beg_ = end_ = 0;
        }
        if (out_.capacity() > k_keep_out_bytes) out_ = std::string();
      } else if (step.state == parse_state::need_more && step.n_consumed == 0) {
        break;
      }
    }
    if (peer_closed_) co_return;
    if (!parser_.started() && drain_.stop_requested()) co_return;  // draining: close idle
    switch (co_await read_more()) {
      case read_status::data:
        break;
      case read_status::timeout:
        if (parser_.started()) co_await send_error(408, "timed out waiting for the request");
        co_return;
      case read_status::eof:
      case read_status::cancelled:
      case read_status::error:
        co_return;
    }
  }
}

// Head complete, body pending: grow the buffer for the body, answer 100-continue.
rt::task<bool> connection::on_head_ready() {
  (void)request_dl_.reset(opts_.body_timeout);
  if (!body_charge_.charge_to(content_length(parser_.current()))) {
    co_await send_over_budget();
    co_return false;
  }
  if (buf_.size() < opts_.max_read_buffer_bytes) {
    std::vector<char> bigger(opts_.max_read_buffer_bytes);
    std::copy(buf_.begin() + static_cast<std::ptrdiff_t>(beg_), buf_.begin() + static_cast<std::ptrdiff_t>(end_),
              bigger.begin());
    end_ -= beg_;
    beg_ = 0;
    buf_ = std::move(bigger);
  }
  const request& req = parser_.current();
  if (!req.expect_continue) co_return true;
  if (!routes_.has_route(req)) {
    // Do not invite the body; answer the head with the routing error and close.
    request copy;
    copy.method = req.method;
    copy.method_name = req.method_name;
    copy.target = req.target;
    response err;
    routes_.find(copy, err);
    std::string out;
    serialize(err, framing{.keep_alive = false}, out);
    rt::deadline dl(lp_, opts_.send_timeout, abort_);
    (void)co_await rt::send_all(lp_, fd_, std::as_bytes(std::span(out.data(), out.size())), dl.token());
    co_await linger_close();
    co_return false;
  }
  static constexpr std::string_view k_continue = "HTTP/1.1 100 Continue\r\n\r\n";
  rt::deadline dl(lp_, opts_.send_timeout, abort_);
  auto r = co_await rt::send_all(lp_, fd_, std::as_bytes(std::span(k_continue.data(), k_continue.size())), dl.token());
  co_return r.ok();
}

// The writer's watch hook: watch_peer until the handler returns (handle() stops and joins).
void connection::start_watch() {
  watch_stop_.emplace();
  watch_.spawn(watch_peer(watch_stop_->get_token()));
}

// Reads into the free tail of the buffer while a handler runs: EOF or an error means the
// peer is gone (stop disconnect_); bytes (a pipelined request) are kept and end the watch.
rt::task<void> connection::watch_peer(std::stop_token stop) {
  if (end_ == buf_.size()) co_return;
  auto space = std::as_writable_bytes(std::span(buf_.data() + end_, buf_.size() - end_));
  auto n = co_await rt::recv_some(lp_, fd_, space, stop);
  if (n && *n > 0) {
    end_ += *n;
    co_return;
  }
  if (!n && n.error().code == errc::cancelled) co_return;
  peer_closed_ = true;
  disconnect_.request_stop();
}

rt::task<bool> connection::handle(request& req) {
  bool keep = req.keep_alive && !req.upgrade && !drain_.stop_requested();
  response_writer w(write_ctx_, req, keep);
  response err;
  const handler* h = routes_.find(req, err);
  if (!h) {
    (void)co_await w.send(std::move(err));
  } else {
    w.set_watch_hook([this] { start_watch(); });
    w.set_take_buffered_hook([this] {
      std::string rest(buf_.data() + beg_, end_ - beg_);
      beg_ = end_ = 0;
      return rest;
    });
    try {
      co_await (*h)(req, w);
    } catch (const std::exception& e) {
      log::error("http: handler for {} {} threw: {}", req.method_name, req.target, e.what());
    }
    if (watch_stop_) {
      watch_stop_->request_stop();
      co_await watch_.join();
      watch_stop_.reset();
    }
    if (w.current_state() == response_writer::state::idle && !w.failed()) {
      w.close_after();
      (void)co_await w.send(error_response(500, "the handler produced no response"));
    } else if (w.current_state() == response_writer::state::streaming && !w.failed()) {
      (void)co_await w.end();
    }
  }
  if (!w.keep_alive() || peer_closed_) {
    if (!w.failed() && !peer_closed_) co_await linger_close();
    co_return false;
  }
  co_return true;
}

rt::task<void> connection::send_error(int status, std::string message, bool retry_after) {
  std::string out;
  response resp = error_response(status, message);
  if (retry_after) resp.headers.add("Retry-After", "1");
  serialize(resp, framing{.keep_alive = false}, out);
  rt::deadline dl(lp_, opts_.send_timeout, abort_);
  auto r = co_await rt::send_all(lp_, fd_, std::as_bytes(std::span(out.data(), out.size())), dl.token());
  if (r) co_await linger_close();
}

// The body does not fit in the process-wide budget of buffered request bytes.
rt::task<void> connection::send_over_budget() {
  thread_local log_throttle warnings{std::chrono::seconds(10)};
  if (warnings.allow())
    log::warn("http: request body refused: {} bytes of request data buffered (budget {})",
              opts_.budget->n_buffered_bytes(), opts_.budget->max_buffered_bytes());
  co_await send_error(503, "the server is busy receiving other requests; retry later", true);
}

// Graceful close after a final response: half-close our side, then discard what the peer
// still sends (bounded in time and bytes) so the kernel does not reset the connection and
// destroy the response before the peer has read it.
rt::task<void> connection::linger_close() {
  ::shutdown(fd_, SHUT_WR);
  rt::deadline dl(lp_, std::chrono::milliseconds(1000), abort_);
  std::size_t n_discarded = 0;
  while (n_discarded < (1u << 20)) {
    auto n = co_await rt::recv_some(lp_, fd_, std::as_writable_bytes(std::span(buf_)), dl.token());
    if (!n || *n == 0) break;
    n_discarded += *n;
  }
}

}  // namespace

rt::task<void> serve_connection(rt::loop& lp, int fd, const router& routes, const server_options& opts,
                                std::stop_token drain, std::stop_token abort) {
  (void)rt::set_nodelay(fd);
  try {
    connection c(lp, fd, routes, opts, std::move(drain), std::move(abort));
    co_await c.run();
  } catch (const std::exception& e) {
    log::error("http: connection failed: {}", e.what());
  }
  (void)co_await rt::close(lp, fd);
}

}  // namespace vks::http
