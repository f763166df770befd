// Reasoning/content splitting (reasoning.hpp).
#include "api/reasoning.hpp"

#include <algorithm>

namespace vks::api {

std::optional<reasoning_tags> reasoning_tags_of_template(std::string_view source) {
  static const reasoning_tags known[] = {
      {"<seed:think>", "</seed:think>"},
      {"[THINK]", "[/THINK]"},
      {"<|channel>thought", "<channel|>"},
      {std::string(k_granite_thought), std::string(k_granite_response)},
      {"<think>", "</think>"},
  };
  for (const auto& t : known)
    if (source.find(t.start) != std::string_view::npos) {
      reasoning_tags out = t;
      if (t.start == "<think>" && source.find("<response>") != std::string_view::npos) {
        out.response_start = "<response>";
        out.response_end = "</response>";
      }
      return out;
    }
  return std::nullopt;
}

bool reasoning_tags_are_special(const reasoning_tags& tags) {
  return tags.start != "<think>" && tags.start != k_granite_thought;
}

bool prompt_opens_reasoning(std::string_view prompt, const reasoning_tags& tags) {
  auto s = prompt.rfind(tags.start);
  if (s == std::string_view::npos) return false;
  auto e = prompt.rfind(tags.end);
  return e == std::string_view::npos || e < s;
}

reasoning_splitter::reasoning_splitter(bool starts_in_reasoning, reasoning_tags tags)
    : tags_(std::move(tags)), state_(starts_in_reasoning ? state::reasoning : state::undecided) {}

namespace {
// Length of the longest suffix of s that is a proper prefix of tag.
std::size_t partial_suffix(std::string_view s, std::string_view tag) {
  for (std::size_t len = std::min(s.size(), tag.size() - 1); len > 0; --len)
    if (s.substr(s.size() - len) == tag.substr(0, len)) return len;
  return 0;
}
}  // namespace

reasoning_splitter::delta reasoning_splitter::push(std::string_view text) {
  delta d;
  pending_.append(text);
  if (state_ == state::undecided) {
    const std::string_view p = pending_, tag = tags_.start;
    if (p.size() < tag.size()) {
      if (tag.substr(0, p.size()) == p) return d;  // may still become the start tag
      state_ = state::content;
    } else if (p.substr(0, tag.size()) == tag) {
      state_ = state::reasoning;
      pending_.erase(0, tag.size());
    } else {
      state_ = state::content;
    }
  }
  if (state_ == state::content) {
    d.content = std::move(pending_);
    pending_.clear();
    return d;
  }
  // Reasoning: everything up to the end tag; hold a possible partial end tag.
  auto e = pending_.find(tags_.end);
  if (e != std::string::npos) {
    d.reasoning = pending_.substr(0, e);
    d.content = pending_.substr(e + tags_.end.size());
    pending_.clear();
    state_ = state::content;
    return d;
  }
  std::size_t keep = partial_suffix(pending_, tags_.end);
  d.reasoning = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return d;
}

std::string response_unwrapper::push(std::string_view text) {
  pending_.append(text);
  std::string out;
  if (state_ == state::undecided) {
    const std::size_t at = pending_.find_first_not_of(" \t\r\n");
    if (at == std::string::npos) return out;  // blanks so far: undecided
    const std::string_view rest = std::string_view(pending_).substr(at);
    if (rest.size() < start_.size() && std::string_view(start_).substr(0, rest.size()) == rest) return out;
    if (rest.starts_with(start_)) {
      pending_.erase(0, at + start_.size());
      state_ = state::inside;
    } else {
      state_ = state::after;
    }
  }
  if (state_ == state::inside) {
    const std::size_t e = pending_.find(end_);
    if (e == std::string::npos) {
      const std::size_t keep = partial_suffix(pending_, end_);
      out = pending_.substr(0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return out;
    }
    out = pending_.substr(0, e);
    pending_.erase(0, e + end_.size());
    state_ = state::after;
  }
  out += pending_;
  pending_.clear();
  return out;
}

std::string response_unwrapper::flush() {
  std::string out = std::move(pending_);
  pending_.clear();
  state_ = state::undecided;
  return out;
}

reasoning_splitter::delta reasoning_splitter::flush() {
  delta d;
  if (state_ == state::reasoning) d.reasoning = std::move(pending_);
  else d.content = std::move(pending_);
  pending_.clear();
  return d;
}

}  // namespace vks::api
