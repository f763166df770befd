// Per-choice text pipeline (choice_text.hpp).
#include "api/choice_text.hpp"

namespace vks::api {

void choice_text::delta::append(delta&& d) {
  reasoning += d.reasoning;
  content += d.content;
  for (auto& c : d.calls) calls.push_back(std::move(c));
}

choice_text::choice_text(const choice_text_settings& s) {
  if (s.reasoning) splitter_.emplace(s.starts_in_reasoning, s.tags);
  if (s.tool_calls != tool_call_format::none) tools_.emplace(s.tool_calls, s.tool_name);
}

void choice_text::add_content(delta& d, std::string_view text) {
  if (!tools_) {
    d.content += text;
    return;
  }
  auto t = tools_->push(text);
  d.content += t.content;
  for (auto& c : t.calls) d.calls.push_back(std::move(c));
}

choice_text::delta choice_text::push(std::string_view text) {
  delta d;
  if (!splitter_) {
    add_content(d, text);
    return d;
  }
  auto s = splitter_->push(text);
  d.reasoning = std::move(s.reasoning);
  add_content(d, s.content);
  return d;
}

choice_text::delta choice_text::flush() {
  delta d;
  if (splitter_) {
    auto s = splitter_->flush();
    d.reasoning = std::move(s.reasoning);
    add_content(d, s.content);
  }
  if (tools_) {
    auto t = tools_->flush();
    d.content += t.content;
    for (auto& c : t.calls) d.calls.push_back(std::move(c));
  }
  return d;
}

}  // namespace vks::api
