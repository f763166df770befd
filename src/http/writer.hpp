// response_writer: how a handler answers one request. Either send() one buffered response,
// or begin() a streamed one and write() pieces (chunked transfer encoding on HTTP/1.1,
// close-delimited on HTTP/1.0), then end(). Every write completes only when the kernel has
// taken all its bytes, so a slow reader suspends the producer (backpressure, no unbounded
// buffer). disconnected() is stopped when the peer closes, the connection fails, or the
// server aborts it (drain timeout): long handlers pass it on (e.g. to cancel generation).
// Owned by the connection coroutine; valid only during the handler call; loop thread only.
// The connection lends every writer the same write_context, so answering a request costs
// no allocation of the writer's own (the buffer keeps its capacity, the send deadline its
// stop_source).
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.hpp"
#include "http/request.hpp"
#include "http/response.hpp"
#include "rt/loop.hpp"
#include "rt/task.hpp"
#include "rt/timeout.hpp"

namespace vks::http {

// Appends one chunk in chunked transfer-coding ("<hex>\r\n<data>\r\n"); empty data appends
// nothing (the terminating chunk is append_last_chunk).
void append_chunk(std::string& out, std::string_view data);
void append_last_chunk(std::string& out);

// The socket handed to a handler by response_writer::upgrade() (WebSocket): the handler
// reads and writes it until it returns; the connection then half-closes and closes it.
struct upgraded_socket {
  rt::loop* lp = nullptr;
  int fd = -1;
  std::string buffered;          // bytes the peer sent after the request (already read)
  std::stop_token disconnected;  // the server aborts the connection (drain timeout)
  std::stop_token draining;      // graceful stop: finish the current exchange, then close
};

// What a connection lends the writer of each of its requests; outlives every writer.
struct write_context {
  rt::loop& lp;
  int fd;
  std::stop_token disconnected;  // the writer's disconnected()
  std::stop_token draining;      // graceful stop requested
  rt::deadline& send_deadline;   // re-armed for each write; its parent is `disconnected`
  std::chrono::milliseconds send_timeout;  // one write stalled this long fails
  std::string& out;              // bytes being written; empty between writes
};

class response_writer {
 public:
  enum class state { idle, streaming, done, upgraded };

  // keep_alive: the request allows another one after it; `draining` stopped at the time
  // the response starts also closes the connection after it.
  response_writer(write_context& ctx, const request& req, bool keep_alive);
  response_writer(const response_writer&) = delete;
  response_writer& operator=(const response_writer&) = delete;

  // Sends a complete response (Content-Length framing). Only in state idle.
  rt::task<result<void>> send(response r);
  // Sends status and headers of a streamed response. Only in state idle.
  rt::task<result<void>> begin(int status, header_list headers);
  // Sends one piece of a streamed body as one write. Empty data sends nothing.
  rt::task<result<void>> write(std::string_view data);
  // Ends a streamed body (last chunk). Only in state streaming.
  rt::task<result<void>> end();
  // Switches protocols: sends `101 Switching Protocols` with `headers` (the caller supplies
  // Upgrade, Connection and the protocol's fields) and hands over the socket. Only in state
  // idle; afterwards the state is upgraded and nothing else may be called on the writer.
  rt::task<result<upgraded_socket>> upgrade(header_list headers);

  state current_state() const noexcept { return state_; }
  bool failed() const noexcept { return failed_; }  // a write failed: the connection is dead
  std::stop_token disconnected() const noexcept { return ctx_.disconnected; }
  // Whether the connection stays open after this response (false after Connection: close,
  // HTTP/1.0 streaming, or a failed write).
  bool keep_alive() const noexcept { return keep_alive_ && !failed_; }
  // Starts watching the socket for the peer closing while the handler runs, so that
  // disconnected() also fires on EOF/reset, not only on a failed write or an abort. Costs
  // one pending receive; long handlers (generation) call it first. Idempotent.
  void watch_disconnect() {
    if (watch_hook_) std::exchange(watch_hook_, nullptr)();
  }
  // internal (the connection): how watch_disconnect() starts the watcher.
  void set_watch_hook(std::function<void()> hook) { watch_hook_ = std::move(hook); }
  // internal (the connection): takes the bytes it has read past the request, for upgrade().
  void set_take_buffered_hook(std::function<std::string()> hook) { take_buffered_ = std::move(hook); }
  // Forces `Connection: close` on the response (before send/begin).
  void close_after() noexcept { keep_alive_ = false; }
  // Adds a header to whatever response this writer sends (send or begin; not upgrade),
  // for a route-wide header set before the handler knows which reply it will make.
  void add_header(std::string name, std::string value) { extra_.add(std::move(name), std::move(value)); }
  const request& req() const noexcept { return req_; }
  int status() const noexcept { return status_; }

 private:
  rt::task<result<void>> flush();

  write_context& ctx_;
  const request& req_;
  bool keep_alive_;
  bool chunked_ = false;
  bool failed_ = false;
  int status_ = 0;
  state state_ = state::idle;
  header_list extra_;  // add_header()
  std::function<void()> watch_hook_;
  std::function<std::string()> take_buffered_;
};

}  // namespace vks::http
