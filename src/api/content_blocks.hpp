// content_blocks: one choice's text (through its choice_text: reasoning split, tool-call
// extraction) as an ordered list of blocks of three kinds, thinking, text and tool_use,
// given as operations (start, delta, stop) that a stream renders as events and an
// accumulator applies to a list; the Anthropic and the Responses formats both build on it.
// Rules (the same whatever the cuts of the text):
// - a new block starts whenever the kind changes; each call is one tool_use block whose
//   one delta is the compact JSON of its arguments object ({} when they are not one);
// - text that is only blank and not inside an open text block waits for the next
//   non-blank text (then opens the block with it) and is dropped when a block of another
//   kind or the end comes first (no blank blocks around tool calls);
// - a piece whose delta holds both text and calls is pushed again one code point at a
//   time, so the blocks keep the order of the generated text.
// Not thread-safe; one per choice.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/choice_text.hpp"
#include "api/json.hpp"

namespace vks::api {

class content_blocks {
 public:
  enum class kind { thinking, text, tool_use };
  struct op {
    enum class what { start, delta, stop } w;
    int index = 0;
    kind k = kind::text;
    std::string text;  // delta: the text / thinking / partial_json
    std::string id, name;  // tool_use start: 24 random hex digits (formats add a prefix), the function
  };
  explicit content_blocks(const choice_text_settings& s) : text_(s), tools_(s.tool_calls != tool_call_format::none) {}
  void push(std::string_view piece, std::vector<op>& out);
  // End of the text: held-back text released, the open block closed.
  void finish(std::vector<op>& out);
  bool any_tool_use() const noexcept { return any_tool_use_; }

 private:
  void apply(choice_text::delta d, std::vector<op>& out);
  void add(kind k, std::string_view text, std::vector<op>& out);
  void add_call(const tool_call& c, std::vector<op>& out);
  void close(std::vector<op>& out);

  choice_text text_;
  bool tools_;
  std::optional<kind> open_;
  int n_blocks_ = 0;
  std::string blank_;  // blank text waiting for a text block
  bool any_tool_use_ = false;
};

// The arguments of a call as an input object ({} when they are not a JSON object).
json tool_input_object(std::string_view arguments);

}  // namespace vks::api
