// gpt-oss harmony reply parsing (harmony.hpp).
#include "api/harmony.hpp"

#include <array>

#include "api/json_parse.hpp"
#include "api/tool_call_syntax.hpp"

namespace vks::api {

namespace {

constexpr auto npos = std::string_view::npos;
constexpr std::string_view k_message = "<|message|>";
constexpr std::string_view k_start = "<|start|>";
// What ends a message body (<|start|> without an end: a new message begins).
constexpr std::array<std::string_view, 4> k_ends{"<|end|>", "<|call|>", "<|return|>", k_start};
constexpr std::size_t k_max_header = 512;
constexpr std::string_view k_not_harmony = "text outside harmony messages was kept as content";

std::size_t partial_suffix(std::string_view s, std::string_view tag) {
  for (std::size_t k = std::min(s.size(), tag.size() - 1); k > 0; --k)
    if (s.substr(s.size() - k) == tag.substr(0, k)) return k;
  return 0;
}

// The word after `key` in a header (up to a blank or a marker), or empty.
std::string_view word_after(std::string_view header, std::string_view key) {
  const auto at = header.find(key);
  if (at == npos) return {};
  std::string_view w = header.substr(at + key.size());
  return w.substr(0, w.find_first_of(" \t\r\n<"));
}

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == npos; }

}  // namespace

json harmony_history(const json& messages) {
  if (!messages.is_array()) return messages;
  json out = json::array();
  for (const auto& m : messages) {
    if (!m.is_object() || m.value("role", "") != "assistant") {
      out.push_back(m);
      continue;
    }
    json first = m;
    if (first.contains("content") && first["content"].is_null()) first.erase("content");
    auto calls = m.find("tool_calls");
    if (calls == m.end() || !calls->is_array() || calls->size() < 2) {
      out.push_back(std::move(first));
      continue;
    }
    first["tool_calls"] = json::array({(*calls)[0]});
    out.push_back(std::move(first));
    for (std::size_t i = 1; i < calls->size(); ++i)
      out.push_back({{"role", "assistant"}, {"tool_calls", json::array({(*calls)[i]})}});
  }
  return out;
}

harmony_parser::delta harmony_parser::push(std::string_view text) {
  delta d;
  pending_ += text;
  while (step(d)) {
  }
  return d;
}

void harmony_parser::open_message(std::string_view header) {
  header_ = header;
  const std::string_view to = word_after(header, "to=");
  recipient_ = to;
  if (!to.empty()) {
    constexpr std::string_view fn = "functions.";
    route_ = to.substr(0, fn.size()) == fn ? route::call : route::foreign;
    if (route_ == route::call) recipient_ = to.substr(fn.size());
  } else {
    route_ = word_after(header, "<|channel|>") == "analysis" ? route::reasoning : route::content;
  }
}

void harmony_parser::add_call(std::string_view body, std::string_view raw, delta& d) {
  std::string why;
  const json args = body.find_first_not_of(" \t\r\n") == npos ? json::object() : parse_json_or_discarded(body);
  if (route_ == route::foreign) {
    why = "a message to \"" + recipient_ + "\" (not a function) was kept as content";
  } else if (!args.is_object() || recipient_.empty()) {
    why = "a malformed harmony tool call was kept as content";
  } else if (opts_.tools && !opts_.tools->offers(recipient_)) {
    why = "a call of \"" + recipient_ + "\", which is not among the offered tools, was kept as content";
  } else if (!opts_.parallel && n_calls_ > 0) {
    why = "parallel_tool_calls is false: a call after the first was kept as content";
  } else {
    ++n_calls_;
    d.calls.push_back({syntax::new_call_id(), recipient_, dump_json(args)});
    return;
  }
  d.content += raw;
  if (opts_.warn) d.warnings.push_back(std::move(why));
}

void harmony_parser::close_message(std::string_view body, std::string_view end_marker, delta& d) {
  if (route_ == route::call || route_ == route::foreign)
    add_call(body, header_ + std::string(k_message) + std::string(body) + std::string(end_marker), d);
  header_.clear();
  recipient_.clear();
  state_ = state::header;
}

bool harmony_parser::step(delta& d) {
  switch (state_) {
    case state::plain:
      d.content += pending_;
      pending_.clear();
      return false;
    case state::header: {
      const auto at = pending_.find(k_message);
      if (at == npos && pending_.size() < k_max_header + k_message.size()) return false;
      if (at == npos || at > k_max_header) {
        state_ = state::plain;
        if (opts_.warn) d.warnings.emplace_back(k_not_harmony);
        return true;
      }
      open_message(std::string_view(pending_).substr(0, at));
      pending_.erase(0, at + k_message.size());
      state_ = state::body;
      return true;
    }
    case state::body: break;
  }
  std::size_t end = npos;
  std::string_view marker;
  for (auto m : k_ends)
    if (auto at = pending_.find(m); at < end) end = at, marker = m;
  const bool held = route_ == route::call || route_ == route::foreign;
  std::string& side = route_ == route::reasoning ? d.reasoning : d.content;
  if (end == npos) {
    std::size_t keep = 0;
    for (auto m : k_ends) keep = std::max(keep, partial_suffix(pending_, m));
    if (!held) {
      side += pending_.substr(0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
    }
    return false;
  }
  const std::string body = pending_.substr(0, end);
  if (!held) side += body;
  // A <|start|> begins the next header: it stays in pending_.
  pending_.erase(0, end + (marker == k_start ? 0 : marker.size()));
  close_message(body, marker == k_start ? std::string_view{} : marker, d);
  return true;
}

harmony_parser::delta harmony_parser::flush() {
  delta d;
  switch (state_) {
    case state::plain: d.content = std::move(pending_); break;
    case state::header:
      if (!blank(pending_)) {
        d.content = std::move(pending_);
        if (opts_.warn) d.warnings.emplace_back(k_not_harmony);
      }
      break;
    case state::body:
      if (route_ == route::reasoning) d.reasoning = std::move(pending_);
      else if (route_ == route::content) d.content = std::move(pending_);
      else add_call(pending_, header_ + std::string(k_message) + pending_, d);
      break;
  }
  pending_.clear();
  header_.clear();
  recipient_.clear();
  state_ = state::header;
  return d;
}

}  // namespace vks::api
