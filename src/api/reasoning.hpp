// Splits generated text into reasoning and content for models that think inside
// <think>...</think> (DeepSeek-R1, Qwen3, ...). Rules, identical for streaming and
// non-streaming (the result never depends on how the text is cut into pushes):
// - starts_in_reasoning (the prompt already opened the start tag; see
//   prompt_opens_reasoning): text is reasoning until the end tag.
// - otherwise, text that begins with the start tag is reasoning from after the tag to the
//   end tag; text that does not begin with it is all content.
// - the tags themselves are dropped; text after the end tag is content (a later start tag
//   stays in content). A sequence that ends inside reasoning leaves it all as reasoning.
// - text that may be the beginning of a tag is held back until it is decided; flush()
//   releases it to the current side.
// Not thread-safe; one per choice.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vks::api {

struct reasoning_tags {
  std::string start = "<think>";
  std::string end = "</think>";
  // appended (#24): the answer's wrapper (Granite 3.3: <response>...</response>), removed
  // from the content by response_unwrapper; empty: none.
  std::string response_start;
  std::string response_end;
};

// Granite 3.2's thinking mode writes plain-text markers (its template asks for them):
// "Here is my thought process:" reasoning "Here is my response:" content.
inline constexpr std::string_view k_granite_thought = "Here is my thought process:";
inline constexpr std::string_view k_granite_response = "Here is my response:";

// The reasoning markers a chat template shows, most specific first: <seed:think> (Seed-OSS),
// [THINK]...[/THINK] (Magistral, Ministral 3 reasoning), <|channel>thought...<channel|>
// (Gemma 4), Granite 3.2's plain-text markers (above), <think> (DeepSeek-R1, Qwen3, GLM, Granite 3.3, SmolLM3, ...); nullopt when it
// shows none. A <think> template that also shows <response> (Granite 3.3) sets the
// response wrapper. gpt-oss's analysis channel is parsed with its tool calls (harmony.hpp).
std::optional<reasoning_tags> reasoning_tags_of_template(std::string_view source);
// The markers are control tokens in their models' vocabularies (all but <think> and
// Granite 3.2's plain text): replies
// must be decoded with special tokens for the split to see them.
bool reasoning_tags_are_special(const reasoning_tags& tags);

// True when the rendered prompt leaves a start tag open (its last start tag comes after
// its last end tag), e.g. DeepSeek-R1 templates and Qwen3 with enable_thinking.
bool prompt_opens_reasoning(std::string_view prompt, const reasoning_tags& tags = {});

// Granite 3.3's thinking mode writes "<think>...</think><response>...</response>": content
// whose first non-blank text is the response start tag loses that tag (and the blanks
// before it) and the first end tag after it; other content passes unchanged. The same for
// every cut of the text (partial tags are held back until decided). One per choice.
class response_unwrapper {
 public:
  response_unwrapper(std::string start, std::string end) : start_(std::move(start)), end_(std::move(end)) {}
  std::string push(std::string_view text);
  std::string flush();

 private:
  enum class state { undecided, inside, after };
  std::string start_, end_;
  state state_ = state::undecided;
  std::string pending_;
};

class reasoning_splitter {
 public:
  explicit reasoning_splitter(bool starts_in_reasoning, reasoning_tags tags = {});

  struct delta {
    std::string reasoning;
    std::string content;
    bool empty() const noexcept { return reasoning.empty() && content.empty(); }
  };
  delta push(std::string_view text);
  delta flush();
  bool in_reasoning() const noexcept { return state_ == state::reasoning; }

 private:
  enum class state { undecided, reasoning, content };
  reasoning_tags tags_;
  state state_;
  std::string pending_;  // undecided prefix, or a possible partial end tag
};

}  // namespace vks::api
