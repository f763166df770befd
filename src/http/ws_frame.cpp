// RFC 6455 frame parser and writers (see ws_frame.hpp). The parser is a two-phase state
// machine (header bytes, then payload bytes) that copies and unmasks payloads into either
// the control-frame buffer or the message being reassembled, so control frames can sit
// between the fragments of a data message.
#include "http/ws_frame.hpp"

#include <algorithm>

#include "base/assert.hpp"
#include "base/utf8.hpp"

namespace vks::http {

bool ws_close_code_valid(std::uint16_t code) noexcept {
  if (code >= 1000 && code <= 1003) return true;
  if (code >= 1007 && code <= 1014) return true;
  return code >= 3000 && code <= 4999;
}

namespace {
bool is_control(ws_opcode op) noexcept { return static_cast<std::uint8_t>(op) >= 0x8; }
bool known_opcode(std::uint8_t op) noexcept { return op <= 0x2 || (op >= 0x8 && op <= 0xA); }
}  // namespace

ws_frame_parser::ws_frame_parser(ws_role role, ws_parser_limits limits) : role_(role), limits_(limits) {}

ws_parse_result ws_frame_parser::fail(std::size_t n_consumed, std::uint16_t code, std::string why) {
  phase_ = phase::done;
  message_.clear();
  control_.clear();
  ws_parse_result r{n_consumed, {}};
  r.event.kind = ws_event_kind::error;
  r.event.code = code;
  r.event.payload = std::move(why);
  return r;
}

std::size_t ws_frame_parser::header_size() const noexcept {
  std::size_t n = 2;
  unsigned len7 = hdr_[1] & 0x7F;
  if (len7 == 126) n += 2;
  if (len7 == 127) n += 8;
  if (hdr_[1] & 0x80) n += 4;
  return n;
}

// Checks what the first two header bytes decide: reserved bits, opcode, mask bit, control
// frame rules and the fragmentation sequence.
std::optional<ws_event> ws_frame_parser::check_first_bytes() {
  auto err = [](std::string why) {
    ws_event e;
    e.kind = ws_event_kind::error;
    e.code = ws_status::protocol_error;
    e.payload = std::move(why);
    return e;
  };
  unsigned b0 = hdr_[0], b1 = hdr_[1];
  if (b0 & 0x70) return err("reserved bits set without a negotiated extension");
  if (!known_opcode(b0 & 0x0F)) return err("reserved opcode " + std::to_string(b0 & 0x0F));
  fin_ = (b0 & 0x80) != 0;
  opcode_ = static_cast<ws_opcode>(b0 & 0x0F);
  masked_ = (b1 & 0x80) != 0;
  if (role_ == ws_role::server && !masked_) return err("client frames must be masked");
  if (role_ == ws_role::client && masked_) return err("server frames must not be masked");
  if (is_control(opcode_)) {
    if (!fin_) return err("fragmented control frame");
    if ((b1 & 0x7F) > 125) return err("control frame payload over 125 bytes");
  } else if (opcode_ == ws_opcode::continuation && !in_message_) {
    return err("continuation frame without a message to continue");
  } else if (opcode_ != ws_opcode::continuation && in_message_) {
    return err("new data frame inside a fragmented message");
  }
  return std::nullopt;
}

// The whole header is in: payload length (minimal encoding, limits) and masking key.
std::optional<ws_event> ws_frame_parser::check_length() {
  auto err = [](std::uint16_t code, std::string why) {
    ws_event e;
    e.kind = ws_event_kind::error;
    e.code = code;
    e.payload = std::move(why);
    return e;
  };
  unsigned len7 = hdr_[1] & 0x7F;
  std::uint64_t len = len7;
  std::size_t at = 2;
  if (len7 == 126) {
    len = (std::uint64_t{hdr_[2]} << 8) | hdr_[3];
    at = 4;
    if (len < 126) return err(ws_status::protocol_error, "payload length not minimally encoded");
  } else if (len7 == 127) {
    len = 0;
    for (std::size_t i = 2; i < 10; ++i) len = (len << 8) | hdr_[i];
    at = 10;
    if (len >> 63) return err(ws_status::protocol_error, "payload length has its top bit set");
    if (len <= 0xFFFF) return err(ws_status::protocol_error, "payload length not minimally encoded");
  }
  if (!is_control(opcode_) && len > limits_.max_message_bytes - message_.size())
    return err(ws_status::message_too_big,
               "message exceeds " + std::to_string(limits_.max_message_bytes) + " bytes");
  if (masked_) std::copy_n(hdr_.begin() + static_cast<std::ptrdiff_t>(at), 4, mask_.begin());
  n_remaining_ = len;
  mask_pos_ = 0;
  if (!is_control(opcode_) && opcode_ != ws_opcode::continuation) {
    in_message_ = true;
    message_opcode_ = opcode_;
    utf8_need_ = 0;
    utf8_lo_ = 0x80;
    utf8_hi_ = 0xBF;
  }
  return std::nullopt;
}

ws_parse_result ws_frame_parser::feed(std::string_view in) {
  std::size_t pos = 0;
  if (phase_ == phase::done) return {in.size(), {}};
  while (pos < in.size()) {
    if (phase_ == phase::header) {
      std::size_t need = n_hdr_ < 2 ? 2 : header_size();
      while (n_hdr_ < need && pos < in.size()) hdr_[n_hdr_++] = static_cast<unsigned char>(in[pos++]);
      if (n_hdr_ < need) break;
      if (need == 2) {
        if (auto e = check_first_bytes()) return fail(pos, e->code, std::move(e->payload));
        if (header_size() > 2) continue;  // extended length and/or masking key follow
      }
      if (auto e = check_length()) return fail(pos, e->code, std::move(e->payload));
      phase_ = phase::payload;
      if (n_remaining_ > 0) continue;
    } else {
      std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n_remaining_, in.size() - pos));
      std::string& dst = is_control(opcode_) ? control_ : message_;
      std::size_t old = dst.size();
      dst.append(in.substr(pos, take));
      if (masked_)
        for (std::size_t i = old; i < dst.size(); ++i)
          dst[i] = static_cast<char>(static_cast<unsigned char>(dst[i]) ^ mask_[mask_pos_++ & 3]);
      pos += take;
      n_remaining_ -= take;
      if (!is_control(opcode_) && message_opcode_ == ws_opcode::text &&
          !utf8_feed(std::string_view(dst).substr(old)))
        return fail(pos, ws_status::invalid_payload, "text message is not valid UTF-8");
      if (n_remaining_ > 0) continue;
    }
    // The frame is complete (possibly with an empty payload).
    phase_ = phase::header;
    n_hdr_ = 0;
    ws_event ev = frame_complete();
    if (ev.kind == ws_event_kind::error) return fail(pos, ev.code, std::move(ev.payload));
    if (ev.kind == ws_event_kind::close) phase_ = phase::done;
    if (ev.kind != ws_event_kind::none) return {pos, std::move(ev)};
  }
  return {pos, {}};
}

ws_event ws_frame_parser::frame_complete() {
  if (is_control(opcode_)) return control_complete();
  ws_event ev;
  if (!fin_) return ev;
  if (message_opcode_ == ws_opcode::text && utf8_need_ != 0) {
    ev.kind = ws_event_kind::error;
    ev.code = ws_status::invalid_payload;
    ev.payload = "text message ends inside a UTF-8 sequence";
    return ev;
  }
  ev.kind = ws_event_kind::message;
  ev.opcode = message_opcode_;
  ev.payload = std::move(message_);
  message_.clear();
  in_message_ = false;
  return ev;
}

ws_event ws_frame_parser::control_complete() {
  ws_event ev;
  std::string payload = std::move(control_);
  control_.clear();
  if (opcode_ == ws_opcode::ping || opcode_ == ws_opcode::pong) {
    ev.kind = opcode_ == ws_opcode::ping ? ws_event_kind::ping : ws_event_kind::pong;
    ev.payload = std::move(payload);
    return ev;
  }
  ev.kind = ws_event_kind::error;
  ev.code = ws_status::protocol_error;
  if (payload.size() == 1) {
    ev.payload = "close frame with a 1-byte payload";
    return ev;
  }
  std::uint16_t code = ws_status::no_status;
  if (payload.size() >= 2) {
    code = static_cast<std::uint16_t>((static_cast<unsigned char>(payload[0]) << 8) |
                                      static_cast<unsigned char>(payload[1]));
    if (!ws_close_code_valid(code)) {
      ev.payload = "invalid close code " + std::to_string(code);
      return ev;
    }
  }
  std::string_view reason = payload.size() >= 2 ? std::string_view(payload).substr(2) : std::string_view{};
  if (!utf8::valid(reason)) {
    ev.code = ws_status::invalid_payload;
    ev.payload = "close reason is not valid UTF-8";
    return ev;
  }
  ev.kind = ws_event_kind::close;
  ev.code = code;
  ev.payload = std::string(reason);
  return ev;
}

// Validates bytes of a text message as they arrive; state carries across frames. Rejects
// overlongs, surrogates and code points above U+10FFFF at the first offending byte.
bool ws_frame_parser::utf8_feed(std::string_view bytes) noexcept {
  for (char ch : bytes) {
    auto b = static_cast<unsigned char>(ch);
    if (utf8_need_ > 0) {
      if (b < utf8_lo_ || b > utf8_hi_) return false;
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      --utf8_need_;
      continue;
    }
    if (b < 0x80) continue;
    if (b >= 0xC2 && b <= 0xDF) {
      utf8_need_ = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      utf8_need_ = 2;
      if (b == 0xE0) utf8_lo_ = 0xA0;
      if (b == 0xED) utf8_hi_ = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      utf8_need_ = 3;
      if (b == 0xF0) utf8_lo_ = 0x90;
      if (b == 0xF4) utf8_hi_ = 0x8F;
    } else {
      return false;
    }
  }
  return true;
}

void append_ws_frame(std::string& out, ws_opcode op, std::string_view payload, bool fin,
                     std::optional<std::array<unsigned char, 4>> mask) {
  VKS_ASSERT(!is_control(op) || (fin && payload.size() <= 125), "invalid control frame");
  out.push_back(static_cast<char>((fin ? 0x80 : 0x00) | static_cast<unsigned>(op)));
  unsigned mbit = mask ? 0x80 : 0x00;
  std::uint64_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(mbit | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(mbit | 126));
    for (int s = 8; s >= 0; s -= 8) out.push_back(static_cast<char>((n >> s) & 0xFF));
  } else {
    out.push_back(static_cast<char>(mbit | 127));
    for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<char>((n >> s) & 0xFF));
  }
  if (!mask) {
    out.append(payload);
    return;
  }
  for (unsigned char k : *mask) out.push_back(static_cast<char>(k));
  std::size_t at = out.size();
  out.append(payload);
  for (std::size_t i = 0; i < payload.size(); ++i)
    out[at + i] = static_cast<char>(static_cast<unsigned char>(out[at + i]) ^ (*mask)[i & 3]);
}

void append_ws_close(std::string& out, std::uint16_t code, std::string_view reason,
                     std::optional<std::array<unsigned char, 4>> mask) {
  if (code == ws_status::no_status) {
    append_ws_frame(out, ws_opcode::close, {}, true, mask);
    return;
  }
  reason = reason.substr(0, 123);
  reason = reason.substr(0, utf8::complete_prefix(reason));
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xFF));
  payload.append(reason);
  append_ws_frame(out, ws_opcode::close, payload, true, mask);
}

}  // namespace vks::http
