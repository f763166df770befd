// Fuzz target for the RFC 6455 frame parser (http/ws_frame.hpp). The first input byte
// picks the piece size the rest is fed in (incremental parsing must not depend on how
// bytes are split) and the role; the remainder is the byte stream. Checks: no crash/UB,
// consumption bounded by the input, the parser never stalls (an event or full consumption
// per call), limits hold, text messages are valid UTF-8, and every message re-encodes and
// parses back to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/utf8.hpp"
#include "http/ws_frame.hpp"

using namespace vks::http;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}

void roundtrip(const ws_event& ev) {
  std::string wire;
  append_ws_frame(wire, ev.opcode, ev.payload, true, std::array<unsigned char, 4>{9, 8, 7, 6});
  ws_frame_parser p(ws_role::server, ws_parser_limits{1 << 16});
  auto r = p.feed(wire);
  check(r.n_consumed == wire.size());
  check(r.event.kind == ws_event_kind::message);
  check(r.event.opcode == ev.opcode && r.event.payload == ev.payload);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::size_t step = (data[0] & 0x3F) + 1;
  ws_role role = (data[0] & 0x80) ? ws_role::client : ws_role::server;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t max_message = 1 << 16;
  ws_frame_parser p(role, ws_parser_limits{max_message});
  for (std::size_t off = 0; off < in.size(); off += step) {
    std::string_view piece = in.substr(off, step);
    while (!piece.empty()) {
      auto r = p.feed(piece);
      check(r.n_consumed <= piece.size());
      check(r.n_consumed == piece.size() || r.event.kind != ws_event_kind::none);
      piece.remove_prefix(r.n_consumed);
      switch (r.event.kind) {
        case ws_event_kind::message:
          check(r.event.payload.size() <= max_message);
          if (r.event.opcode == ws_opcode::text) check(vks::utf8::valid(r.event.payload));
          roundtrip(r.event);
          break;
        case ws_event_kind::ping:
        case ws_event_kind::pong:
          check(r.event.payload.size() <= 125);
          break;
        case ws_event_kind::close:
          check(r.event.code == ws_status::no_status || ws_close_code_valid(r.event.code));
          check(p.finished());
          break;
        case ws_event_kind::error:
          check(r.event.code == ws_status::protocol_error || r.event.code == ws_status::invalid_payload ||
                r.event.code == ws_status::message_too_big);
          check(p.finished());
          break;
        case ws_event_kind::none:
          break;
      }
    }
  }
  return 0;
}
