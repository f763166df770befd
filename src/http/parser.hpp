// Incremental HTTP/1.x request parser on llhttp. Feed it whatever bytes arrived; it reports
// head_ready when a request head completed but its body has not fully arrived (so the caller
// can answer `Expect: 100-continue`), and stops when the whole request is complete, leaving
// the remaining bytes (pipelined requests) unconsumed. Limits map to statuses: header section too large -> 431,
// body over the limit -> 413, malformed -> 400, HTTP major version != 1 -> 505.
// Not movable (llhttp keeps a pointer to it); one parser per connection, one thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "http/request.hpp"

namespace vks::http {

struct parse_limits {
  std::size_t max_header_bytes = 16 * 1024;       // request line + header fields as sent, bytes (CRLFs included)
  std::size_t max_body_bytes = 16 * 1024 * 1024;  // decoded body, bytes
  std::size_t max_headers = 128;                  // header fields per request
};

enum class parse_state {
  need_more,  // every byte fed was consumed; no event yet
  head_ready,  // request line + headers parsed, body still pending; all input consumed
  complete,    // a whole request is ready: take() it
  error,       // unrecoverable; error_status()/error_message() say why; close after answering
};

struct parse_step {
  parse_state state = parse_state::need_more;
  std::size_t n_consumed = 0;  // bytes of the input consumed by this call
};

class request_parser {
 public:
  explicit request_parser(parse_limits limits = {});
  ~request_parser();
  request_parser(const request_parser&) = delete;
  request_parser& operator=(const request_parser&) = delete;

  // Parses a prefix of `in`. After head_ready or complete, call again with the rest.
  // After error, the parser stays in the error state.
  parse_step feed(std::string_view in);
  // The peer closed the stream: true if a request was partially received (a truncated
  // request is malformed; the caller answers 400 or just closes).
  bool mid_request() const noexcept { return in_message_; }
  // Whether any byte of the current request has been seen (false between requests).
  bool started() const noexcept { return in_message_; }

  // The request being parsed: head fields valid from head_ready, body from complete.
  const request& current() const noexcept { return req_; }
  // Moves the completed request out and prepares for the next one.
  request take();
  // Optional: hands a request back once its handler is done; the next request reuses its
  // header list, target and body buffers instead of growing new ones (small ones only:
  // an idle connection keeps at most a few KiB this way).
  void recycle(request&& done) noexcept;

  int error_status() const noexcept { return error_status_; }
  const std::string& error_message() const noexcept { return error_message_; }
  const parse_limits& limits() const noexcept { return limits_; }

 private:
  struct impl;
  friend struct impl;
  int fail(int status, std::string message);

  std::unique_ptr<impl> impl_;
  parse_limits limits_;
  request req_;
  request spare_;  // recycle(): cleared buffers for the next take()
  std::string field_;  // header field being assembled
  std::string value_;  // header value being assembled
  std::size_t n_header_bytes_ = 0;  // raw bytes of the current head consumed so far
  bool in_message_ = false;
  bool head_done_ = false;
  bool message_done_ = false;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace vks::http
