// Functionary v3.2's recipient messages (tool_calls.hpp, functionary_v3_2): the reply is
// ">>>recipient\nbody" messages, the first ">>>" being the end of the prompt. Content
// messages stream; a call's body is held until the next ">>>" outside a JSON string (or
// the end) and judged: a call, or the message as written kept as content with a warning.
#include <algorithm>

#include "api/tool_call_syntax.hpp"
#include "api/tool_calls.hpp"

namespace vks::api {

namespace {

constexpr std::string_view k_open = ">>>";
constexpr std::size_t k_max_recipient = 128;  // a longer first line is prose, not a recipient

// A recipient line: a function name (or "all"), nothing that prose or markup would have.
bool recipient_like(std::string_view line) {
  return !line.empty() && line.size() <= k_max_recipient && line.find_first_of(" \t\r<>[]{}()\"'") == std::string_view::npos;
}

// Length of the longest suffix of s that is a proper prefix of ">>>".
std::size_t partial_open(std::string_view s) {
  for (std::size_t k = std::min<std::size_t>(s.size(), 2); k > 0; --k)
    if (s.substr(s.size() - k) == k_open.substr(0, k)) return k;
  return 0;
}

}  // namespace

tool_call_parser::delta tool_call_parser::push_recipients(std::string_view text) {
  delta d;
  pending_ += text;
  for (;;) {
    if (part_ == message_part::head) {
      if (!decided_) {  // the reply's start: its own ">>>" opens the first message explicitly
        if (pending_.size() < k_open.size() && k_open.substr(0, pending_.size()) == pending_) return d;
        if (pending_.starts_with(k_open)) {
          pending_.erase(0, k_open.size());
          explicit_open_ = true;
        }
        decided_ = true;
      }
      const std::size_t nl = pending_.find('\n');
      const std::string_view line = std::string_view(pending_).substr(0, nl);
      const bool prose = !line.empty() && !recipient_like(line.substr(0, k_max_recipient + 1));
      if (prose || nl == 0) {
        // Not a recipient: the message is content (a ">>>" written in the reply is a
        // malformed message, kept with a warning).
        if (explicit_open_) {
          d.content += k_open;
          if (opts_.warn) d.warnings.push_back("a malformed functionary_v3_2 message was kept as content");
        }
        part_ = message_part::content;
        continue;
      }
      if (nl == std::string::npos) return d;
      recipient_ = line;
      pending_.erase(0, nl + 1);
      part_ = recipient_ == "all" ? message_part::content : message_part::args;
      scan_ = 0;
      depth_ = 0;
      in_string_ = escaped_ = false;
      continue;
    }
    if (part_ == message_part::content) {
      const std::size_t at = pending_.find(k_open);
      if (at == std::string::npos) {
        const std::size_t keep = partial_open(pending_);
        d.content += pending_.substr(0, pending_.size() - keep);
        pending_.erase(0, pending_.size() - keep);
        return d;
      }
      d.content += pending_.substr(0, at);
      pending_.erase(0, at + k_open.size());
      part_ = message_part::head;
      explicit_open_ = true;
      continue;
    }
    // args: find the ">>>" that closes the body (not inside a JSON string or value).
    std::size_t close = std::string::npos;
    for (; scan_ < pending_.size(); ++scan_) {
      const char c = pending_[scan_];
      if (in_string_) {
        if (escaped_) escaped_ = false;
        else if (c == '\\') escaped_ = true;
        else if (c == '"') in_string_ = false;
        continue;
      }
      if (c == '"') in_string_ = true;
      else if (c == '{' || c == '[') ++depth_;
      else if (c == '}' || c == ']') --depth_;
      else if (c == '>' && depth_ <= 0) {
        const std::string_view rest = std::string_view(pending_).substr(scan_);
        if (rest.starts_with(k_open)) {
          close = scan_;
          break;
        }
        if (k_open.starts_with(rest)) return d;  // may become ">>>": wait, rescanning from here
      }
    }
    if (close == std::string::npos) return d;
    const std::string body = pending_.substr(0, close);
    pending_.erase(0, close + k_open.size());
    judge_recipient(body, false, d);
    part_ = message_part::head;
    explicit_open_ = true;
  }
}

void tool_call_parser::judge_recipient(std::string_view body, bool at_end, delta& d) {
  auto calls = syntax::parse_recipient_message(recipient_, body);
  std::string why = std::string(at_end ? "an unfinished" : "a malformed") + " functionary_v3_2 tool call was kept as content";
  if (calls && accept(*calls, why)) {
    for (auto& c : *calls) d.calls.push_back(std::move(c));
    return;
  }
  if (explicit_open_) d.content += k_open;
  d.content += recipient_;
  d.content += '\n';
  d.content += body;
  if (opts_.warn) d.warnings.push_back(std::move(why));
}

tool_call_parser::delta tool_call_parser::flush_recipients() {
  delta d;
  switch (part_) {
    case message_part::head:
      // A recipient line never finished: content (an unfinished call when the reply opened it).
      if (explicit_open_) {
        d.content += k_open;
        if (opts_.warn) d.warnings.push_back("an unfinished functionary_v3_2 message was kept as content");
      }
      d.content += pending_;
      break;
    case message_part::content: d.content = std::move(pending_); break;
    case message_part::args: judge_recipient(pending_, true, d); break;
  }
  pending_.clear();
  part_ = message_part::head;
  explicit_open_ = decided_ = false;
  return d;
}

}  // namespace vks::api
