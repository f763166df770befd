// Per-choice text pipeline (choice_text.hpp).
#include "api/choice_text.hpp"

namespace vks::api {

namespace {

template <class D>
void take(choice_text::delta& d, D&& t) {
  d.content += t.content;
  for (auto& c : t.calls) d.calls.push_back(std::move(c));
  for (auto& w : t.warnings) d.warnings.push_back(std::move(w));
}

}  // namespace

void choice_text::delta::append(delta&& d) {
  reasoning += d.reasoning;
  content += d.content;
  for (auto& c : d.calls) calls.push_back(std::move(c));
  for (auto& w : d.warnings) warnings.push_back(std::move(w));
}

choice_text::choice_text(const choice_text_settings& s) {
  tool_parse_options opts{s.tools, s.parallel_tool_calls, true};
  if (s.tool_calls == tool_call_format::harmony) {
    harmony_.emplace(opts);
    return;
  }
  if (s.reasoning) splitter_.emplace(s.starts_in_reasoning, s.tags);
  if (!s.tags.response_start.empty()) response_.emplace(s.tags.response_start, s.tags.response_end);
  if (s.tool_calls == tool_call_format::none) return;
  tools_.emplace(s.tool_calls, s.tool_name, opts);
  if (s.reasoning && (s.tool_calls == tool_call_format::hermes || s.tool_calls == tool_call_format::qwen3_xml ||
                      s.tool_calls == tool_call_format::seed_oss)) {
    opts.warn = false;  // prose about tags in reasoning is ordinary
    reasoning_tools_.emplace(s.tool_calls, std::string(), opts);
  }
}

void choice_text::add_content(delta& d, std::string_view text, bool end) {
  std::string unwrapped;
  if (response_) {
    unwrapped = response_->push(text);
    if (end) unwrapped += response_->flush();
    text = unwrapped;
  }
  if (!tools_) {
    d.content += text;
    return;
  }
  take(d, tools_->push(text));
}

// Reasoning text, through the reasoning-side call parser when there is one; `ended`: the
// splitter left reasoning (its held-back block is judged now).
void choice_text::add_reasoning(delta& d, std::string_view text, bool ended) {
  if (!reasoning_tools_) {
    d.reasoning += text;
    return;
  }
  auto t = reasoning_tools_->push(text);
  if (ended) {
    auto f = reasoning_tools_->flush();
    t.content += f.content;
    for (auto& c : f.calls) t.calls.push_back(std::move(c));
  }
  d.reasoning += t.content;
  for (auto& c : t.calls) d.calls.push_back(std::move(c));
}

choice_text::delta choice_text::push(std::string_view text) {
  delta d;
  if (harmony_) {
    auto h = harmony_->push(text);
    d.reasoning = std::move(h.reasoning);
    take(d, std::move(h));
    return d;
  }
  if (!splitter_) {
    add_content(d, text);
    return d;
  }
  auto s = splitter_->push(text);
  add_reasoning(d, s.reasoning, !splitter_->in_reasoning());
  add_content(d, s.content);
  return d;
}

choice_text::delta choice_text::flush() {
  delta d;
  if (harmony_) {
    auto h = harmony_->flush();
    d.reasoning = std::move(h.reasoning);
    take(d, std::move(h));
    return d;
  }
  if (splitter_) {
    auto s = splitter_->flush();
    add_reasoning(d, s.reasoning, true);
    add_content(d, s.content, true);
  } else if (response_) {
    add_content(d, {}, true);
  }
  if (tools_) take(d, tools_->flush());
  return d;
}

}  // namespace vks::api
