// sse_stream: the OpenAI event stream of one response. Payloads produced by the api
// stream builders are buffered and leave in one write per flush() (the handler flushes
// after each batch of engine events, so a token reaches the client as soon as its step is
// done, and events that queued up meanwhile share one write). done() sends
// `data: [DONE]` and ends the response. Loop thread only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/writer.hpp"
#include "rt/task.hpp"

namespace vks::server {

class sse_stream {
 public:
  explicit sse_stream(http::response_writer& w) : w_(w) {}

  // 200, text/event-stream. false: the connection failed.
  rt::task<bool> begin();
  void add(std::string_view payload);
  void add(const std::vector<std::string>& payloads) {
    for (const auto& p : payloads) add(p);
  }
  rt::task<bool> flush();
  rt::task<bool> done();  // flush + [DONE] + end of body

 private:
  http::response_writer& w_;
  std::string buf_;
};

}  // namespace vks::server
