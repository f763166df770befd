// The one per-choice text pipeline of a chat choice: generated text -> reasoning split
// (reasoning_splitter, when the model thinks) -> tool-call extraction from the content part
// (tool_call_parser, when a format is set) -> {reasoning, content, calls}. The streaming and
// the non-streaming chat builders both feed every piece of a choice's text through one of
// these, so what they deliver is the same whatever the cuts (both stages are cut-invariant).
// Harmony (gpt-oss) replies carry reasoning and calls in one framing: harmony_parser does
// both stages. With a tag format that models also write while thinking (hermes,
// qwen3_xml), calls inside the reasoning are extracted too (Qwen3.5 often opens
// <tool_call> before </think>); a reasoning block that is not a call stays reasoning.
// Blocks kept as content (fail closed) add a warning (delta::warnings). With a response
// wrapper in the tags (Granite 3.3's <response>), the content loses it before call extraction.
// Not thread-safe; one per choice.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/harmony.hpp"
#include "api/reasoning.hpp"
#include "api/tool_calls.hpp"

namespace vks::api {

struct choice_text_settings {
  bool reasoning = false;            // split <think> text out
  bool starts_in_reasoning = false;  // the prompt opened the start tag
  reasoning_tags tags;
  tool_call_format tool_calls = tool_call_format::none;
  std::string tool_name;             // the function of tool_call_format::named_arguments
  // appended (#24)
  std::shared_ptr<const tool_catalog> tools;  // offered functions (null: names not checked)
  bool parallel_tool_calls = true;            // false: calls after the first stay content
};

class choice_text {
 public:
  explicit choice_text(const choice_text_settings& s);

  struct delta {
    std::string reasoning;
    std::string content;
    std::vector<tool_call> calls;  // completed by this piece, in order
    std::vector<std::string> warnings;  // blocks kept as content (fail closed), in order
    bool empty() const noexcept {
      return reasoning.empty() && content.empty() && calls.empty() && warnings.empty();
    }
    void append(delta&& d);
  };
  // What `text` decides; text that may still become a tag or a call is held back.
  delta push(std::string_view text);
  // The end of the choice's text: held-back text released, an open call block judged.
  delta flush();

 private:
  void add_content(delta& d, std::string_view text, bool end = false);  // end: the choice's text ended
  void add_reasoning(delta& d, std::string_view text, bool ended);

  std::optional<reasoning_splitter> splitter_;
  std::optional<tool_call_parser> tools_;
  std::optional<tool_call_parser> reasoning_tools_;  // calls written inside reasoning
  std::optional<harmony_parser> harmony_;
  std::optional<response_unwrapper> response_;  // tags.response_start set (Granite 3.3)
};

}  // namespace vks::api
