// response_writer (see writer.hpp): serialization into the connection's buffer, then
// send_all under the connection's send deadline (also stopped by its disconnect token),
// re-armed for the write and disarmed after it.
#include "http/writer.hpp"

#include <cstddef>
#include <span>

#include "rt/io.hpp"
#include "rt/timeout.hpp"

namespace vks::http {

void append_chunk(std::string& out, std::string_view data) {
  if (data.empty()) return;
  static constexpr char k_hex[] = "0123456789abcdef";
  char buf[20];
  int n = 0;
  for (std::size_t v = data.size(); v != 0; v >>= 4) buf[n++] = k_hex[v & 0xf];
  while (n > 0) out += buf[--n];
  out += "\r\n";
  out += data;
  out += "\r\n";
}

void append_last_chunk(std::string& out) { out += "0\r\n\r\n"; }

response_writer::response_writer(write_context& ctx, const request& req, bool keep_alive)
    : ctx_(ctx), req_(req), keep_alive_(keep_alive) {}

rt::task<result<void>> response_writer::flush() {
  std::string& out = ctx_.out;
  if (out.empty()) co_return ok();
  if (failed_) {
    out.clear();
    co_return fail(errc::io, "connection already failed");
  }
  // reset() is refused once the deadline stopped (disconnected, or an earlier write timed
  // out); its stopped token then fails the send at once.
  rt::deadline& dl = ctx_.send_deadline;
  (void)dl.reset(ctx_.send_timeout);
  auto bytes = std::as_bytes(std::span(out.data(), out.size()));
  auto r = rt::map_timeout(co_await rt::send_all(ctx_.lp, ctx_.fd, bytes, dl.token()), dl);
  dl.disarm();
  out.clear();
  if (!r) failed_ = true;
  co_return r;
}

rt::task<result<void>> response_writer::send(response r) {
  VKS_ASSERT(state_ == state::idle, "response already started");
  state_ = state::done;
  status_ = r.status;
  if (ctx_.draining.stop_requested()) keep_alive_ = false;
  framing f{.head = req_.method == method::head, .keep_alive = keep_alive_, .version_minor = req_.version_minor};
  for (const auto& h : extra_) r.headers.add(h.name, h.value);
  serialize(r, f, ctx_.out);
  co_return co_await flush();
}

rt::task<result<void>> response_writer::begin(int status, header_list headers) {
  VKS_ASSERT(state_ == state::idle, "response already started");
  state_ = state::streaming;
  status_ = status;
  if (ctx_.draining.stop_requested()) keep_alive_ = false;
  bool head = req_.method == method::head;
  chunked_ = req_.version_minor >= 1 && !head;
  if (req_.version_minor == 0) keep_alive_ = false;  // close-delimited body
  if (chunked_) headers.set("Transfer-Encoding", "chunked");
  for (const auto& h : extra_) headers.add(h.name, h.value);
  framing f{.head = head, .keep_alive = keep_alive_, .version_minor = req_.version_minor};
  serialize_head(status, headers, f, ctx_.out);
  ctx_.out += "\r\n";
  co_return co_await flush();
}

rt::task<result<void>> response_writer::write(std::string_view data) {
  VKS_ASSERT(state_ == state::streaming, "write() outside a streamed response");
  if (req_.method == method::head || data.empty()) co_return ok();
  if (chunked_)
    append_chunk(ctx_.out, data);
  else
    ctx_.out.append(data);
  co_return co_await flush();
}

rt::task<result<void>> response_writer::end() {
  VKS_ASSERT(state_ == state::streaming, "end() outside a streamed response");
  state_ = state::done;
  if (chunked_) append_last_chunk(ctx_.out);
  co_return co_await flush();
}

rt::task<result<upgraded_socket>> response_writer::upgrade(header_list headers) {
  VKS_ASSERT(state_ == state::idle, "response already started");
  state_ = state::upgraded;
  status_ = 101;
  keep_alive_ = false;
  // keep_alive true in the framing: the handler's own `Connection: Upgrade` is the only one.
  serialize_head(101, headers, framing{.keep_alive = true, .version_minor = 1}, ctx_.out);
  ctx_.out += "\r\n";
  auto r = co_await flush();
  if (!r) co_return fail(std::move(r).error());
  upgraded_socket s{&ctx_.lp, ctx_.fd, take_buffered_ ? take_buffered_() : std::string{}, ctx_.disconnected,
                    ctx_.draining};
  co_return s;
}

}  // namespace vks::http
