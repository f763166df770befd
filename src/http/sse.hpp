// Server-sent events over a streamed response: each event is formatted into one buffer and
// leaves as one write (one chunk), so a client sees whole events as soon as they exist.
// done() sends `data: [DONE]` (the OpenAI stream terminator) and ends the response.
#pragma once

#include <string>
#include <string_view>

#include "base/result.hpp"
#include "http/writer.hpp"
#include "rt/task.hpp"

namespace vks::http {

// Appends "data: <line>\n" per line of `payload` and a blank line (`event: <name>` first
// when name is non-empty). JSON payloads are one line.
void append_sse_event(std::string& out, std::string_view payload, std::string_view name = {});

class sse_writer {
 public:
  explicit sse_writer(response_writer& w) : w_(w) {}

  // 200 with Content-Type: text/event-stream, Cache-Control: no-cache; `extra` added.
  rt::task<result<void>> begin(header_list extra = {});
  // One event: `data: <payload>\n\n`.
  rt::task<result<void>> send(std::string_view payload, std::string_view name = {});
  // `data: [DONE]\n\n`, then the end of the response.
  rt::task<result<void>> done();

  std::stop_token disconnected() const noexcept { return w_.disconnected(); }

 private:
  response_writer& w_;
  std::string buf_;
};

}  // namespace vks::http
