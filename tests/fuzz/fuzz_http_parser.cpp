// Fuzz target for the HTTP/1.x request parser (http/parser.hpp). The first input byte picks
// the piece size the rest is fed in; the remainder is the byte stream (requests may be
// pipelined). Checks: no crash/UB; every call consumes within its input; the parser never
// stalls (need_more consumes everything it was given); limits hold on every completed
// request; an error carries a 4xx/5xx status and a message; and the sequence of outcomes
// (requests and their fields, or the error status) is the same as when the stream is fed
// whole, so incremental parsing does not depend on how bytes are split.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/parser.hpp"

using namespace vks::http;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

constexpr parse_limits k_limits{.max_header_bytes = 1024, .max_body_bytes = 4096, .max_headers = 16};

// Feeds `in` in pieces of `piece` bytes (0: whole) and records every outcome as text.
std::string run(std::string_view in, std::size_t piece) {
  request_parser p(k_limits);
  std::string log;
  std::string pending;  // bytes handed over but not yet consumed
  std::size_t pos = 0;
  while (pos < in.size() || !pending.empty()) {
    if (pos < in.size()) {
      std::size_t n = piece == 0 ? in.size() - pos : std::min(piece, in.size() - pos);
      pending.append(in.substr(pos, n));
      pos += n;
    }
    for (;;) {
      auto step = p.feed(pending);
      check(step.n_consumed <= pending.size());
      pending.erase(0, step.n_consumed);
      if (step.state == parse_state::error) {
        check(p.error_status() >= 400 && p.error_status() < 600);
        check(!p.error_message().empty());
        return log + "error " + std::to_string(p.error_status());
      }
      if (step.state == parse_state::need_more) {
        check(pending.empty());  // never stalls on bytes it was given
        break;
      }
      if (step.state == parse_state::complete) {
        request r = p.take();
        check(r.body.size() <= k_limits.max_body_bytes);
        check(r.headers.size() <= k_limits.max_headers);
        log += r.method_name + " " + r.target + " " + std::to_string(r.version_minor) + " " +
               std::to_string(r.headers.size()) + " " + std::to_string(r.body.size()) + " " +
               (r.keep_alive ? "k" : "c") + "|" + r.body + "\n";
      }
      // head_ready: the body is pending; feed again (possibly with nothing left).
      if (pending.empty() && step.state == parse_state::head_ready) break;
    }
    if (pos >= in.size()) break;
  }
  return log + (p.mid_request() ? "partial" : "idle");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::size_t piece = 1 + data[0] % 16;
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string whole = run(in, 0);
  const std::string split = run(in, piece);
  if (whole != split) {
    std::fprintf(stderr, "split-dependent outcome (piece %zu):\n whole: %s\n split: %s\n", piece,
                 whole.c_str(), split.c_str());
    std::abort();
  }
  return 0;
}
