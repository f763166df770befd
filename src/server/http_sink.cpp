// JSON, SSE and JSON-lines framing over the chunked response writer.
#include "server/http_sink.hpp"

#include "http/headers.hpp"
#include "http/sse.hpp"
#include "server/replies.hpp"

namespace vks::server {

namespace {

// The value of the leading `"type":"..."` member of a typed payload ("" if none).
std::string_view event_type(std::string_view payload) {
  constexpr std::string_view head = R"({"type":")";
  if (payload.substr(0, head.size()) != head) return {};
  payload.remove_prefix(head.size());
  return payload.substr(0, payload.find('"'));
}

}  // namespace

http_sink::http_sink(service& svc, http::response_writer& w, framing f, error_shape shape)
    : svc_(svc), w_(w), framing_(f), shape_(shape) {
  w_.watch_disconnect();
}

rt::task<bool> http_sink::begin() {
  http::header_list h;
  if (framing_ == framing::json_lines) {
    h.add("Content-Type", "application/jsonlines");
    h.add("Cache-Control", "no-cache");
  } else {
    h.add("Content-Type", "text/event-stream; charset=utf-8");
    h.add("Cache-Control", "no-cache");
    h.add("X-Accel-Buffering", "no");
  }
  auto r = co_await w_.begin(200, std::move(h));
  co_return r.ok();
}

void http_sink::add(std::string_view payload) {
  if (framing_ == framing::sse) {
    http::append_sse_event(buf_, payload);
  } else if (framing_ == framing::sse_typed) {
    http::append_sse_event(buf_, payload, event_type(payload));
  } else {
    buf_ += payload;
    buf_ += '\n';
  }
}

rt::task<bool> http_sink::flush() {
  if (buf_.empty()) co_return !w_.failed();
  auto r = co_await w_.write(buf_);
  buf_.clear();
  co_return r.ok();
}

rt::task<void> http_sink::end() {
  if (framing_ == framing::sse) add("[DONE]");
  const bool flushed = co_await flush();
  if (flushed) (void)co_await w_.end();
}

rt::task<void> http_sink::reply(const api::json& body) { co_await reply_json(w_, 200, body); }

rt::task<void> http_sink::fail(const vks::error& e) { co_await reply_error(svc_, w_, e, shape_); }

}  // namespace vks::server
