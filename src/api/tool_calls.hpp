// Extracts tool calls from generated content in the Hermes format, the one Qwen2.5, Qwen3,
// Hermes and the many models trained on their templates emit (the templates show it):
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// Rules, identical for streaming and non-streaming (the result never depends on how the
// text is cut into pushes):
// - text outside tool_call blocks is content; text that may be the beginning of the start
//   tag is held back until decided;
// - a block's body must be a JSON object with a string "name" and "arguments" (an object,
//   or a string holding JSON; "parameters" is accepted for "arguments"): it becomes a call
//   whose arguments are the compact JSON text. Any other body leaves the whole block,
//   tags included, in content;
// - a block still open when the text ends is judged the same way (models often stop at
//   end-of-turn right after the JSON).
// Not thread-safe; one per choice.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vks::api {

struct tool_call {
  std::string id;         // "chatcmpl-tool-<32 hex>" (vLLM's form)
  std::string name;
  std::string arguments;  // JSON text
};

class tool_call_parser {
 public:
  struct delta {
    std::string content;
    std::vector<tool_call> calls;
    bool empty() const noexcept { return content.empty() && calls.empty(); }
  };
  // The content and calls completed by `text`. Within one delta, content and calls are
  // reported apart (content text that followed a call in the same push comes out in
  // `content` too); concatenating every delta's content gives the same text either way.
  delta push(std::string_view text);
  // The rest at the end of the text: held-back text, or the open block judged as above.
  delta flush();

 private:
  bool in_call_ = false;
  std::string pending_;  // outside: a possible partial start tag; inside: the block's body so far
};

}  // namespace vks::api
