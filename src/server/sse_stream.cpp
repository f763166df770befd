// SSE framing of OpenAI streams over the chunked response writer.
#include "server/sse_stream.hpp"

#include "http/sse.hpp"

namespace vks::server {

rt::task<bool> sse_stream::begin() {
  http::header_list h;
  h.add("Content-Type", "text/event-stream; charset=utf-8");
  h.add("Cache-Control", "no-cache");
  h.add("X-Accel-Buffering", "no");
  auto r = co_await w_.begin(200, std::move(h));
  co_return r.ok();
}

void sse_stream::add(std::string_view payload) { http::append_sse_event(buf_, payload); }

rt::task<bool> sse_stream::flush() {
  if (buf_.empty()) co_return !w_.failed();
  auto r = co_await w_.write(buf_);
  buf_.clear();
  co_return r.ok();
}

rt::task<bool> sse_stream::done() {
  add("[DONE]");
  if (!co_await flush()) co_return false;
  auto r = co_await w_.end();
  co_return r.ok();
}

}  // namespace vks::server
