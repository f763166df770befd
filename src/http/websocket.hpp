// ws_connection: one WebSocket connection on the rt runtime after the opening handshake.
// run() drives two coroutines on the connection's loop thread:
//   - the reader: receives frames, answers pings at once (also while the application is in
//     the middle of a long reply), queues data messages, handles the peer's close and
//     protocol errors (close frame with the matching code);
//   - the application: receive() messages, send_text()/send_binary() replies, close().
// Writes are serialized: each send suspends until the kernel has taken its frame (slow
// reader -> suspended producer, bounded memory); a pong or close waiting behind a data frame
// goes out right after the frame being written. All members: loop thread only.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "http/budget.hpp"
#include "http/writer.hpp"
#include "http/ws_frame.hpp"
#include "rt/loop.hpp"
#include "rt/task.hpp"

namespace vks::http {

struct ws_options {
  std::size_t max_message_bytes = 16 * 1024 * 1024;  // reassembled message (-> close 1009)
  std::size_t read_buffer_bytes = 16 * 1024;
  // Messages received but not yet taken by receive(); at this count the reader pauses
  // (pings are then answered only once the application catches up).
  std::size_t max_queued_messages = 64;
  std::chrono::milliseconds send_timeout{60'000};   // one write stalled this long -> fail
  std::chrono::milliseconds close_timeout{5'000};   // wait for the peer's close reply
  // No byte received or sent for this long -> close 1001 "idle timeout"; 0: off.
  std::chrono::milliseconds idle_timeout{600'000};
  // A message (or frame) begun but not completed within this -> close 1008; 0: off.
  std::chrono::milliseconds assembly_timeout{30'000};
  // Process-wide buffered-bytes budget (nullptr: none): the message being reassembled plus
  // the messages queued for receive() are charged; refused -> close 1013 "try again later".
  server_budget* budget = nullptr;
};

struct ws_message {
  bool binary = false;  // opcode of the message: binary (true) or text (false)
  std::string data;     // text messages are valid UTF-8
};

class ws_connection {
 public:
  // fd: a connected non-blocking socket that has completed the handshake; not closed here.
  // buffered: bytes already read past the handshake. disconnected: hard abort (stop all I/O);
  // draining: graceful stop (no new messages; close 1001 once the application returns).
  ws_connection(rt::loop& lp, int fd, ws_options opts, std::string buffered = {},
                std::stop_token disconnected = {}, std::stop_token draining = {});
  ws_connection(const ws_connection&) = delete;
  ws_connection& operator=(const ws_connection&) = delete;
  ~ws_connection();

  using app_fn = std::function<rt::task<void>(ws_connection&)>;
  // Runs the reader and app(*this) until both are done: the application returned (then a
  // close 1000, or 1001 when draining, is sent unless one was) and the close handshake
  // finished or timed out, or the connection failed. Exceptions from app close with 1011.
  // Once per connection.
  rt::task<void> run(app_fn app);

  // The next data message; nullopt when no more will come (peer closed, connection failed,
  // close sent, draining). One caller at a time.
  rt::task<std::optional<ws_message>> receive();
  // One unfragmented frame each. Errors: errc::io (connection failed or closing).
  rt::task<result<void>> send_text(std::string_view payload);
  rt::task<result<void>> send_binary(std::string_view payload);
  // Starts the close handshake (code and a short reason); later sends fail. Idempotent.
  rt::task<void> close(std::uint16_t code, std::string_view reason);

  // Stopped when the connection is ending (peer close, EOF, protocol error, failed write,
  // abort): long application work (generation) passes it on to stop early.
  std::stop_token closing() const noexcept { return closing_.get_token(); }
  // The peer's close code (1005 without one, 1006 when the TCP stream just ended), or 0.
  std::uint16_t peer_close_code() const noexcept { return peer_close_code_; }
  // The code of the close frame we sent, or 0.
  std::uint16_t sent_close_code() const noexcept { return sent_close_code_; }

 private:
  struct park;  // suspends a coroutine in a slot until wake(slot)
  struct stop_all;
  struct wake_receiver;

  rt::task<void> read_loop();
  rt::task<bool> on_event(ws_event ev);
  rt::task<void> close_timer(std::stop_token stop);
  rt::task<result<void>> send_data(ws_opcode op, std::string_view payload);
  rt::task<void> flush_urgent();
  rt::task<result<void>> write_locked(std::string bytes);
  void queue_close(std::uint16_t code, std::string_view reason);
  std::string take_urgent();
  void wake(std::coroutine_handle<>& slot);
  void end_reading();
  bool charge_buffered();
  std::chrono::milliseconds next_wait(std::chrono::steady_clock::time_point now, bool& assembly) const;

  rt::loop& lp_;
  int fd_;
  ws_options opts_;
  ws_frame_parser parser_;
  std::string rbuf_;             // received bytes not yet parsed (starts with `buffered`)
  std::stop_token disconnected_;
  std::stop_token draining_;
  std::stop_source stop_;        // hard stop of all socket I/O
  std::stop_source closing_;     // see closing()
  std::deque<ws_message> inbox_;
  std::size_t n_inbox_bytes_ = 0;            // data bytes of inbox_
  budget_charge charge_;                     // n_inbox_bytes_ + the parser's partial message
  std::chrono::steady_clock::time_point last_activity_;  // last byte received or frame sent
  std::optional<std::chrono::steady_clock::time_point> assembly_start_;  // parser_.partial() since
  bool reader_done_ = false;
  bool app_done_ = false;
  bool failed_ = false;          // a write failed: nothing more can be sent
  bool writing_ = false;         // a coroutine owns the socket for writing
  bool close_queued_ = false;
  std::optional<std::string> pending_pong_;  // payload of the latest unanswered ping
  std::string pending_close_;                // close frame queued, not yet written
  std::uint16_t peer_close_code_ = 0;
  std::uint16_t sent_close_code_ = 0;
  std::coroutine_handle<> receiver_;         // parked in receive()
  std::coroutine_handle<> reader_;           // parked: inbox full
  std::deque<std::coroutine_handle<>> write_waiters_;
};

// A route handler's whole WebSocket answer: refuses a bad handshake with its error response
// (check_ws_handshake), else switches protocols on `w` and runs a ws_connection with `app`
// until the connection ends. The app function must stay alive until this returns.
// `protocol` non-empty: the 101 answer selects it (Sec-WebSocket-Protocol); it must be one
// of the client's offers (a browser fails a connection whose offer was not answered).
rt::task<void> accept_websocket(const request& req, response_writer& w, ws_options opts,
                                ws_connection::app_fn app, std::string_view protocol = {});

}  // namespace vks::http
