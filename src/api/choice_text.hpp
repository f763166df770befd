// The one per-choice text pipeline of a chat choice: generated text -> reasoning split
// (reasoning_splitter, when the model thinks) -> tool-call extraction from the content part
// (tool_call_parser, when a format is set) -> {reasoning, content, calls}. The streaming and
// the non-streaming chat builders both feed every piece of a choice's text through one of
// these, so what they deliver is the same whatever the cuts (both stages are cut-invariant).
// Not thread-safe; one per choice.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/reasoning.hpp"
#include "api/tool_calls.hpp"

namespace vks::api {

struct choice_text_settings {
  bool reasoning = false;            // split <think> text out
  bool starts_in_reasoning = false;  // the prompt opened the start tag
  reasoning_tags tags;
  tool_call_format tool_calls = tool_call_format::none;
  std::string tool_name;             // the function of tool_call_format::named_arguments
};

class choice_text {
 public:
  explicit choice_text(const choice_text_settings& s);

  struct delta {
    std::string reasoning;
    std::string content;
    std::vector<tool_call> calls;  // completed by this piece, in order
    bool empty() const noexcept { return reasoning.empty() && content.empty() && calls.empty(); }
    void append(delta&& d);
  };
  // What `text` decides; text that may still become a tag or a call is held back.
  delta push(std::string_view text);
  // The end of the choice's text: held-back text released, an open call block judged.
  delta flush();

 private:
  void add_content(delta& d, std::string_view text);

  std::optional<reasoning_splitter> splitter_;
  std::optional<tool_call_parser> tools_;
};

}  // namespace vks::api
