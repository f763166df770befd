// SSE formatting (see sse.hpp).
#include "http/sse.hpp"

namespace vks::http {

void append_sse_event(std::string& out, std::string_view payload, std::string_view name) {
  if (!name.empty()) {
    out += "event: ";
    out += name;
    out += '\n';
  }
  while (true) {
    auto nl = payload.find('\n');
    out += "data: ";
    out += payload.substr(0, nl);
    out += '\n';
    if (nl == std::string_view::npos) break;
    payload.remove_prefix(nl + 1);
  }
  out += '\n';
}

rt::task<result<void>> sse_writer::begin(header_list extra) {
  extra.set("Content-Type", "text/event-stream");
  extra.set("Cache-Control", "no-cache");
  extra.set("X-Accel-Buffering", "no");
  co_return co_await w_.begin(200, std::move(extra));
}

rt::task<result<void>> sse_writer::send(std::string_view payload, std::string_view name) {
  buf_.clear();
  append_sse_event(buf_, payload, name);
  co_return co_await w_.write(buf_);
}

rt::task<result<void>> sse_writer::done() {
  buf_.clear();
  append_sse_event(buf_, "[DONE]");
  auto r = co_await w_.write(buf_);
  if (!r) co_return r;
  co_return co_await w_.end();
}

}  // namespace vks::http
