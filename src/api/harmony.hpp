// gpt-oss "harmony" replies: a sequence of messages
//   [<|start|>assistant]<|channel|>C[ to=R][ <|constrain|>json]<|message|>BODY(<|end|>|<|call|>|<|return|>)
// (the prompt ends with "<|start|>assistant", so the first header starts at <|channel|>; the
// recipient may also stand before <|channel|>). Routing, by header:
// - a recipient functions.f (on any channel, analysis included) -> a tool call of f, its
//   body the JSON arguments (held until the message ends; the reply usually ends at
//   <|call|>, an end-of-turn token, so the open message is judged at the end);
// - channel analysis -> reasoning; final, commentary (preambles) and unknown channels -> content;
// - fail closed: a call whose body is not a JSON object, whose function was not offered,
//   or that is a second call with parallel calls off, a message to another recipient
//   (built-in browser/python tools), and text that is not harmony at all (no <|message|>
//   within the first 512 bytes of a header) go to content as written, with a warning.
// Reasoning and content stream as they come (text that may be the beginning of a marker
// is held back); the result never depends on how the text is cut. Not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/json.hpp"
#include "api/tool_calls.hpp"

namespace vks::api {

// The chat history as gpt-oss's template can render it (normalised messages in, copies
// out): an assistant message's null content is dropped (the template tests `in
// message.content`, which fails on null, the content OpenAI clients send with tool calls),
// and an assistant message with several tool calls becomes one message per call (the
// template renders tool_calls[0] only; harmony writes one call per message), the first
// keeping the reasoning and content.
json harmony_history(const json& messages);

class harmony_parser {
 public:
  explicit harmony_parser(tool_parse_options opts = {}) : opts_(std::move(opts)) {}

  struct delta {
    std::string reasoning;
    std::string content;
    std::vector<tool_call> calls;
    std::vector<std::string> warnings;
  };
  delta push(std::string_view text);
  delta flush();

 private:
  enum class state { header, body, plain };
  enum class route { reasoning, content, call, foreign };
  bool step(delta& d);               // one decision on pending_; false when it needs more text
  void open_message(std::string_view header);
  void close_message(std::string_view body, std::string_view end_marker, delta& d);
  void add_call(std::string_view body, std::string_view raw, delta& d);

  tool_parse_options opts_;
  state state_ = state::header;
  route route_ = route::content;
  std::string header_;     // the open message's header, as written
  std::string recipient_;  // its function name (route call) or recipient (route foreign)
  std::string pending_;
  int n_calls_ = 0;
};

}  // namespace vks::api
