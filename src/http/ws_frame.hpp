// RFC 6455 framing: opcodes and close codes, an incremental frame parser that reassembles
// fragmented messages (control frames may arrive between the fragments) and validates
// everything a server must (masking, reserved bits and opcodes, control frame rules,
// minimal length encoding, message size limit, UTF-8 of text messages and close reasons),
// and the frame writers. Pure byte processing: no sockets. Not thread-safe; one per peer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vks::http {

enum class ws_opcode : std::uint8_t {
  continuation = 0x0,
  text = 0x1,
  binary = 0x2,
  close = 0x8,
  ping = 0x9,
  pong = 0xA,
};

// Close status codes (RFC 6455 section 7.4.1). Numbers on the wire, so plain constants.
namespace ws_status {
inline constexpr std::uint16_t normal = 1000;
inline constexpr std::uint16_t going_away = 1001;
inline constexpr std::uint16_t protocol_error = 1002;
inline constexpr std::uint16_t unsupported_data = 1003;
inline constexpr std::uint16_t no_status = 1005;  // never sent: "the close frame had no code"
inline constexpr std::uint16_t abnormal = 1006;   // never sent: "the TCP connection just ended"
inline constexpr std::uint16_t invalid_payload = 1007;
inline constexpr std::uint16_t policy_violation = 1008;
inline constexpr std::uint16_t message_too_big = 1009;
inline constexpr std::uint16_t internal_error = 1011;
inline constexpr std::uint16_t try_again_later = 1013;
}  // namespace ws_status

// Whether a peer may send `code` in a close frame: 1000-1003, 1007-1014 and 3000-4999.
bool ws_close_code_valid(std::uint16_t code) noexcept;

// Which side the parser reads for: a server requires masked frames (RFC 6455 5.1), a client
// (tests, tools) requires unmasked ones.
enum class ws_role { server, client };

struct ws_parser_limits {
  std::size_t max_message_bytes = 16 * 1024 * 1024;  // reassembled data message, bytes (-> 1009)
};

enum class ws_event_kind {
  none,     // the input was consumed without completing an event
  message,  // a complete (reassembled) data message
  ping,
  pong,
  close,    // the peer's close frame; the parser ignores all input after it
  error,    // protocol violation; close the connection with `code`; the parser stays failed
};

struct ws_event {
  ws_event_kind kind = ws_event_kind::none;
  ws_opcode opcode = ws_opcode::binary;  // message: text or binary (the first frame's opcode)
  // message: the data; ping/pong: the payload; close: the reason (UTF-8); error: why.
  std::string payload;
  // close: the peer's code (1005 when its close frame was empty); error: the code to send.
  std::uint16_t code = 0;
};

struct ws_parse_result {
  std::size_t n_consumed = 0;  // bytes of the input consumed by this call
  ws_event event;              // kind none when the call needs more input
};

class ws_frame_parser {
 public:
  explicit ws_frame_parser(ws_role role = ws_role::server, ws_parser_limits limits = {});

  // Parses a prefix of `in`: stops right after the bytes that complete an event (call again
  // with the rest) or consumes everything (event none). Payloads are unmasked while copied,
  // so the input need not stay alive between calls. After error or close, every call
  // consumes all input and returns none.
  ws_parse_result feed(std::string_view in);

  bool in_message() const noexcept { return in_message_; }  // a fragmented message is open
  bool finished() const noexcept { return phase_ == phase::done; }
  // The peer owes the rest of something: a frame header or payload arrived in part, or a
  // fragmented message has not ended (what the assembly timeout bounds).
  bool partial() const noexcept {
    return phase_ != phase::done && (in_message_ || phase_ == phase::payload || n_hdr_ > 0);
  }
  // Bytes of the data message being reassembled (what the memory budget is charged).
  std::size_t n_message_bytes() const noexcept { return message_.size(); }

 private:
  enum class phase { header, payload, done };
  ws_parse_result fail(std::size_t n_consumed, std::uint16_t code, std::string why);
  std::size_t header_size() const noexcept;
  std::optional<ws_event> check_first_bytes();
  std::optional<ws_event> check_length();
  ws_event frame_complete();
  ws_event control_complete();

  ws_role role_;
  ws_parser_limits limits_;
  phase phase_ = phase::header;
  std::array<unsigned char, 14> hdr_{};  // the frame header as received (2..14 bytes)
  std::size_t n_hdr_ = 0;
  bool fin_ = false;
  ws_opcode opcode_ = ws_opcode::continuation;
  std::array<unsigned char, 4> mask_{};
  bool masked_ = false;
  std::uint64_t n_remaining_ = 0;  // payload bytes of the current frame still to read
  std::size_t mask_pos_ = 0;       // payload bytes of the current frame read so far (mod 4 matters)
  std::string control_;            // payload of the control frame being read
  std::string message_;            // the data message being reassembled
  bool in_message_ = false;
  ws_opcode message_opcode_ = ws_opcode::binary;
  // Incremental UTF-8 check of a text message: continuation bytes still expected, and the
  // allowed range of the next one (narrowed after E0, ED, F0, F4 leads).
  int utf8_need_ = 0;
  unsigned char utf8_lo_ = 0x80, utf8_hi_ = 0xBF;
  bool utf8_feed(std::string_view bytes) noexcept;
};

// Appends one frame. Servers send unmasked frames (mask nullopt); a client (tests) passes a
// masking key. Control frames must be fin with <= 125 bytes of payload (asserted).
void append_ws_frame(std::string& out, ws_opcode op, std::string_view payload, bool fin = true,
                     std::optional<std::array<unsigned char, 4>> mask = std::nullopt);
// Appends a close frame with `code` and `reason` (truncated to 123 bytes on a UTF-8
// boundary). code 1005 (no_status) appends an empty close frame.
void append_ws_close(std::string& out, std::uint16_t code, std::string_view reason,
                     std::optional<std::array<unsigned char, 4>> mask = std::nullopt);

}  // namespace vks::http
