// Extracts tool calls from generated content in the formats chat templates teach models.
// A call is a JSON object with a string "name" and "arguments" (an object, or a string
// holding JSON; "parameters" is accepted for "arguments"); its arguments come out as
// compact JSON text.
//
// hermes (Qwen2.5, Qwen3, Hermes and the many models trained on their templates):
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// - text outside tool_call blocks is content; text that may be the beginning of the start
//   tag is held back until decided;
// - a block whose body is not a call stays in content whole, tags included;
// - a block still open when the text ends is judged the same way (models often stop at
//   end-of-turn right after the JSON).
// llama3_json (Llama 3.1/3.2 templates: "Respond in the format {"name": function name,
// "parameters": ...}"): a reply whose first non-blank character is "{" or "[" is held back whole
// and judged at the end: one call object, several separated by ";", or a JSON list of
// them become calls; anything else (and every other reply, streamed as it comes) is content.
//
// named_arguments (a named tool_choice, whose output the grammar holds to the function's
// parameters schema): the whole reply is held back and becomes one call of that function
// with the reply as its arguments (compact JSON when it parses as an object, else as
// written).
//
// All are identical for streaming and non-streaming: the result never depends on how the
// text is cut into pushes. Not thread-safe; one per choice.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vks::api {

enum class tool_call_format { none, hermes, llama3_json, named_arguments };

// The format a chat template teaches (none when it shows neither).
tool_call_format tool_call_format_of_template(std::string_view source);

struct tool_call {
  std::string id;         // "chatcmpl-tool-<32 hex>" (vLLM's form)
  std::string name;
  std::string arguments;  // JSON text
};

class tool_call_parser {
 public:
  // name: the function of named_arguments (unused by the other formats).
  explicit tool_call_parser(tool_call_format f = tool_call_format::hermes, std::string name = {})
      : format_(f), name_(std::move(name)) {}

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
  delta push_hermes(std::string_view text);
  delta push_llama3(std::string_view text);

  tool_call_format format_;
  std::string name_;
  bool in_call_ = false;     // hermes: inside a block; llama3_json: the reply started with "{"
  bool decided_ = false;     // llama3_json: the first non-blank character was seen
  std::string pending_;      // text held back (partial tag, block body, or the JSON reply)
};

}  // namespace vks::api
