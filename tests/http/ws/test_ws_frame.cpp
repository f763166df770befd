// RFC 6455 frame parser and writer: masking, every opcode, fragmentation with interleaved
// control frames, byte-at-a-time input, length encodings, limits (1009), UTF-8 (1007),
// close codes and protocol violations (1002).
#include "catch.hpp"

#include <string>
#include <vector>

#include "http/ws_frame.hpp"

using namespace vks::http;

namespace {
constexpr std::array<unsigned char, 4> k_mask{0x37, 0xfa, 0x21, 0x3d};

std::string masked(ws_opcode op, std::string_view payload, bool fin = true) {
  std::string out;
  append_ws_frame(out, op, payload, fin, k_mask);
  return out;
}

// Feeds everything (in pieces of `step` bytes) and collects the events.
std::vector<ws_event> parse_all(ws_frame_parser& p, std::string_view in, std::size_t step = 0) {
  std::vector<ws_event> out;
  if (step == 0) step = in.size() ? in.size() : 1;
  for (std::size_t off = 0; off < in.size(); off += step) {
    std::string_view piece = in.substr(off, step);
    while (!piece.empty()) {
      auto r = p.feed(piece);
      REQUIRE(r.n_consumed <= piece.size());
      piece.remove_prefix(r.n_consumed);
      if (r.event.kind != ws_event_kind::none) out.push_back(std::move(r.event));
      else REQUIRE(piece.empty());
    }
  }
  return out;
}

std::vector<ws_event> parse_all(std::string_view in, std::size_t step = 0, ws_parser_limits lim = {}) {
  ws_frame_parser p(ws_role::server, lim);
  return parse_all(p, in, step);
}

ws_event only_error(std::string_view in, ws_parser_limits lim = {}) {
  auto evs = parse_all(in, 0, lim);
  REQUIRE(!evs.empty());
  return evs.back();
}
}  // namespace

TEST_CASE("ws frame: writer layouts (RFC 6455 5.7 examples)", "[ws][frame]") {
  std::string out;
  append_ws_frame(out, ws_opcode::text, "Hello");
  CHECK(out == std::string("\x81\x05Hello", 7));
  out.clear();
  append_ws_frame(out, ws_opcode::text, "Hello", true, std::array<unsigned char, 4>{0x37, 0xfa, 0x21, 0x3d});
  CHECK(out == std::string("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11));
  out.clear();
  append_ws_frame(out, ws_opcode::text, "Hel", false);
  append_ws_frame(out, ws_opcode::continuation, "lo");
  CHECK(out == std::string("\x01\x03Hel\x80\x02lo", 9));
  out.clear();
  append_ws_frame(out, ws_opcode::binary, std::string(256, 'x'));
  CHECK(out.substr(0, 4) == std::string("\x82\x7e\x01\x00", 4));
  CHECK(out.size() == 4 + 256);
  out.clear();
  append_ws_frame(out, ws_opcode::binary, std::string(65536, 'x'));
  CHECK(out.substr(0, 10) == std::string("\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10));
  out.clear();
  append_ws_close(out, 1000, "bye");
  CHECK(out == std::string("\x88\x05\x03\xe8" "bye", 7));
  out.clear();
  append_ws_close(out, ws_status::no_status, "ignored");
  CHECK(out == std::string("\x88\x00", 2));
}

TEST_CASE("ws frame: close reason is truncated to 123 bytes on a UTF-8 boundary", "[ws][frame]") {
  std::string reason(122, 'a');
  reason += "\xc3\xa9";  // 'é' straddles byte 123
  std::string out;
  append_ws_close(out, 1011, reason);
  REQUIRE(static_cast<unsigned char>(out[1]) == 2 + 122);
  ws_frame_parser p(ws_role::client);
  auto evs = parse_all(p, out);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].kind == ws_event_kind::close);
  CHECK(evs[0].code == 1011);
  CHECK(evs[0].payload == std::string(122, 'a'));
}

TEST_CASE("ws frame: masked text and binary messages, whole and byte by byte", "[ws][frame]") {
  std::string in = masked(ws_opcode::text, "Hello") + masked(ws_opcode::binary, std::string("\x00\xff\x80", 3)) +
                   masked(ws_opcode::text, "") + masked(ws_opcode::binary, std::string(70000, 'b')) +
                   masked(ws_opcode::text, std::string(300, 't'));
  for (std::size_t step : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{4096}}) {
    auto evs = parse_all(in, step);
    REQUIRE(evs.size() == 5);
    CHECK(evs[0].kind == ws_event_kind::message);
    CHECK(evs[0].opcode == ws_opcode::text);
    CHECK(evs[0].payload == "Hello");
    CHECK(evs[1].opcode == ws_opcode::binary);
    CHECK(evs[1].payload == std::string("\x00\xff\x80", 3));
    CHECK(evs[2].kind == ws_event_kind::message);
    CHECK(evs[2].payload.empty());
    CHECK(evs[3].payload == std::string(70000, 'b'));
    CHECK(evs[4].payload == std::string(300, 't'));
  }
}

TEST_CASE("ws frame: ping, pong and close events", "[ws][frame]") {
  std::string close_payload = std::string("\x0f\xa0", 2) + "done";  // 4000
  auto evs = parse_all(masked(ws_opcode::ping, "p1") + masked(ws_opcode::pong, "") + masked(ws_opcode::ping, "") +
                       masked(ws_opcode::close, close_payload) + masked(ws_opcode::text, "after close"));
  REQUIRE(evs.size() == 4);
  CHECK(evs[0].kind == ws_event_kind::ping);
  CHECK(evs[0].payload == "p1");
  CHECK(evs[1].kind == ws_event_kind::pong);
  CHECK(evs[2].kind == ws_event_kind::ping);
  CHECK(evs[2].payload.empty());
  CHECK(evs[3].kind == ws_event_kind::close);
  CHECK(evs[3].code == 4000);
  CHECK(evs[3].payload == "done");

  auto empty_close = parse_all(masked(ws_opcode::close, ""));
  REQUIRE(empty_close.size() == 1);
  CHECK(empty_close[0].kind == ws_event_kind::close);
  CHECK(empty_close[0].code == ws_status::no_status);
}

TEST_CASE("ws frame: fragmented message with control frames in between", "[ws][frame]") {
  std::string in = masked(ws_opcode::text, "{\"a\":", false) + masked(ws_opcode::ping, "mid") +
                   masked(ws_opcode::continuation, "", false) + masked(ws_opcode::pong, "x") +
                   masked(ws_opcode::continuation, "1}", true) + masked(ws_opcode::binary, "b1", false) +
                   masked(ws_opcode::continuation, "b2");
  for (std::size_t step : {std::size_t{0}, std::size_t{1}, std::size_t{2}}) {
    ws_frame_parser p;
    auto evs = parse_all(p, in, step);
    REQUIRE(evs.size() == 4);
    CHECK(evs[0].kind == ws_event_kind::ping);
    CHECK(evs[0].payload == "mid");
    CHECK(evs[1].kind == ws_event_kind::pong);
    CHECK(evs[2].kind == ws_event_kind::message);
    CHECK(evs[2].opcode == ws_opcode::text);
    CHECK(evs[2].payload == "{\"a\":1}");
    CHECK(evs[3].opcode == ws_opcode::binary);
    CHECK(evs[3].payload == "b1b2");
    CHECK(!p.in_message());
  }
}

TEST_CASE("ws frame: UTF-8 split across fragments is fine; invalid UTF-8 -> 1007", "[ws][frame]") {
  // "é€😀" split inside every multi-byte sequence.
  std::string text = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
  std::string in = masked(ws_opcode::text, text.substr(0, 1), false) + masked(ws_opcode::continuation, text.substr(1, 3), false) +
                   masked(ws_opcode::continuation, text.substr(4, 3), false) + masked(ws_opcode::continuation, text.substr(7));
  auto evs = parse_all(in);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].payload == text);

  const char* bad[] = {"\xff", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80", "ok\xc3"};
  for (const char* b : bad) {
    auto e = only_error(masked(ws_opcode::text, b));
    CHECK(e.kind == ws_event_kind::error);
    CHECK(e.code == ws_status::invalid_payload);
  }
  // Fail fast: the first fragment is already invalid, no need to wait for FIN.
  auto e = only_error(masked(ws_opcode::text, "\xc3\x28", false));
  CHECK(e.code == ws_status::invalid_payload);
  // A truncated sequence at the end of a fragmented message.
  e = only_error(masked(ws_opcode::text, "a", false) + masked(ws_opcode::continuation, "\xe2\x82"));
  CHECK(e.code == ws_status::invalid_payload);
  // Binary messages are not checked.
  auto bin = parse_all(masked(ws_opcode::binary, "\xff\xfe"));
  REQUIRE(bin.size() == 1);
  CHECK(bin[0].kind == ws_event_kind::message);
}

TEST_CASE("ws frame: protocol violations -> 1002", "[ws][frame]") {
  auto code_of = [](const std::string& in) {
    auto e = only_error(in);
    REQUIRE(e.kind == ws_event_kind::error);
    CHECK(!e.payload.empty());
    return e.code;
  };
  std::string unmasked;
  append_ws_frame(unmasked, ws_opcode::text, "hi");
  CHECK(code_of(unmasked) == ws_status::protocol_error);

  for (unsigned rsv : {0x40u, 0x20u, 0x10u}) {
    std::string f = masked(ws_opcode::text, "hi");
    f[0] = static_cast<char>(static_cast<unsigned char>(f[0]) | rsv);
    CHECK(code_of(f) == ws_status::protocol_error);
  }
  for (unsigned op : {3u, 4u, 5u, 6u, 7u, 0xBu, 0xCu, 0xDu, 0xEu, 0xFu}) {
    std::string f = masked(ws_opcode::binary, "x");
    f[0] = static_cast<char>(0x80 | op);
    CHECK(code_of(f) == ws_status::protocol_error);
  }
  // Fragmented control frame; control payload > 125.
  std::string f = masked(ws_opcode::ping, "x");
  f[0] = static_cast<char>(0x09);
  CHECK(code_of(f) == ws_status::protocol_error);
  CHECK(code_of(std::string("\x89\xfe\x00\x7e", 4) + "mask" + std::string(126, 'p')) == ws_status::protocol_error);
  // Continuation without a message; a new message inside a fragmented one.
  CHECK(code_of(masked(ws_opcode::continuation, "x")) == ws_status::protocol_error);
  CHECK(code_of(masked(ws_opcode::text, "a", false) + masked(ws_opcode::text, "b")) == ws_status::protocol_error);
  // Non-minimal lengths and the 64-bit top bit.
  CHECK(code_of(std::string("\x82\xfe\x00\x05", 4) + "mask" + "hello") == ws_status::protocol_error);
  CHECK(code_of(std::string("\x82\xff\x00\x00\x00\x00\x00\x00\x00\x05", 10) + "mask") == ws_status::protocol_error);
  CHECK(code_of(std::string("\x82\xff\x80\x00\x00\x00\x00\x00\x00\x00", 10) + "mask") == ws_status::protocol_error);
}

TEST_CASE("ws frame: close codes and reasons", "[ws][frame]") {
  auto close_frame = [](std::uint16_t code, std::string_view reason = {}) {
    std::string p;
    p.push_back(static_cast<char>(code >> 8));
    p.push_back(static_cast<char>(code & 0xff));
    p.append(reason);
    return masked(ws_opcode::close, p);
  };
  for (std::uint16_t ok : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999}) {
    auto evs = parse_all(close_frame(ok, "r"));
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].kind == ws_event_kind::close);
    CHECK(evs[0].code == ok);
    CHECK(ws_close_code_valid(ok));
  }
  for (std::uint16_t bad : {0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535}) {
    auto e = only_error(close_frame(bad));
    CHECK(e.kind == ws_event_kind::error);
    CHECK(e.code == ws_status::protocol_error);
    CHECK(!ws_close_code_valid(bad));
  }
  auto one_byte = only_error(masked(ws_opcode::close, "\x03"));
  CHECK(one_byte.code == ws_status::protocol_error);
  auto bad_reason = only_error(close_frame(1000, "\xff"));
  CHECK(bad_reason.code == ws_status::invalid_payload);
}

TEST_CASE("ws frame: message size limit -> 1009, also across fragments", "[ws][frame]") {
  ws_parser_limits lim{100};
  auto evs = parse_all(masked(ws_opcode::binary, std::string(100, 'x')), 0, lim);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].kind == ws_event_kind::message);
  auto e = only_error(masked(ws_opcode::binary, std::string(101, 'x')), lim);
  CHECK(e.code == ws_status::message_too_big);
  e = only_error(masked(ws_opcode::text, std::string(60, 'x'), false) + masked(ws_opcode::continuation, std::string(41, 'x')),
                 lim);
  CHECK(e.code == ws_status::message_too_big);
  // The limit is enforced from the header: a huge declared length fails before any payload.
  ws_frame_parser p(ws_role::server, lim);
  auto r = p.feed(std::string("\x82\xff\x00\x00\x00\x01\x00\x00\x00\x00", 10) + "mask");
  CHECK(r.event.kind == ws_event_kind::error);
  CHECK(r.event.code == ws_status::message_too_big);
}

TEST_CASE("ws frame: the parser stays failed and consumes everything after an error", "[ws][frame]") {
  ws_frame_parser p;
  auto r = p.feed(masked(ws_opcode::continuation, "x"));
  CHECK(r.event.kind == ws_event_kind::error);
  CHECK(p.finished());
  std::string more = masked(ws_opcode::text, "hello");
  r = p.feed(more);
  CHECK(r.n_consumed == more.size());
  CHECK(r.event.kind == ws_event_kind::none);
}

TEST_CASE("ws frame: client role reads unmasked server frames and rejects masked ones", "[ws][frame]") {
  std::string server_frames;
  append_ws_frame(server_frames, ws_opcode::text, "data: 1");
  append_ws_frame(server_frames, ws_opcode::pong, "p");
  ws_frame_parser c(ws_role::client);
  auto evs = parse_all(c, server_frames, 1);
  REQUIRE(evs.size() == 2);
  CHECK(evs[0].payload == "data: 1");
  CHECK(evs[1].kind == ws_event_kind::pong);
  ws_frame_parser c2(ws_role::client);
  auto e = parse_all(c2, masked(ws_opcode::text, "x"));
  REQUIRE(e.size() == 1);
  CHECK(e[0].code == ws_status::protocol_error);
}
