// Hermes-format tool-call extraction (tool_calls.hpp).
#include "api/tool_calls.hpp"

#include <algorithm>

#include "api/json.hpp"
#include "api/json_parse.hpp"
#include "api/response_common.hpp"

namespace vks::api {

namespace {

constexpr std::string_view k_start = "<tool_call>";
constexpr std::string_view k_end = "</tool_call>";

// Length of the longest suffix of `s` that is a proper prefix of `tag`.
std::size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (std::size_t k = std::min(s.size(), tag.size() - 1); k > 0; --k)
    if (s.substr(s.size() - k) == tag.substr(0, k)) return k;
  return 0;
}

// The call a block body describes, or false.
bool parse_call(std::string_view body, tool_call& out) {
  json j = parse_json_or_discarded(body);
  if (!j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return false;
  std::string fn = name->get<std::string>();
  if (fn.empty()) return false;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  json a = json::object();
  if (args != j.end()) {
    if (args->is_object()) {
      a = *args;
    } else if (args->is_string()) {
      a = parse_json_or_discarded(args->get<std::string>());
      if (!a.is_object()) return false;
    } else {
      return false;
    }
  }
  out.id = "chatcmpl-tool-" + random_uuid_hex();
  out.name = std::move(fn);
  out.arguments = dump_json(a);
  return true;
}

// Calls in a llama3_json reply: one object, objects separated by ";", or a list of them.
// All or nothing: false (and `out` untouched) unless every part is a call.
bool parse_llama3(std::string_view text, std::vector<tool_call>& out) {
  constexpr auto npos = std::string_view::npos;
  std::vector<tool_call> calls;
  const json whole = parse_json_or_discarded(text);
  if (whole.is_array()) {
    for (const auto& item : whole) {
      tool_call c;
      if (!parse_call(dump_json(item), c)) return false;
      calls.push_back(std::move(c));
    }
  } else {
    // Split at ";"; a piece that does not parse is extended to the next ";" (the ";" was
    // inside a string).
    std::size_t from = 0, end = text.find(';');
    for (;;) {
      const std::string_view piece = text.substr(from, end == npos ? npos : end - from);
      tool_call c;
      if (parse_call(piece, c)) {
        calls.push_back(std::move(c));
        if (end == npos) break;
        from = end + 1;
        end = text.find(';', from);
      } else if (end != npos) {
        end = text.find(';', end + 1);
      } else if (!calls.empty() && piece.find_first_not_of(" \t\r\n") == npos) {
        break;  // a trailing ";"
      } else {
        return false;
      }
    }
  }
  if (calls.empty()) return false;
  for (auto& c : calls) out.push_back(std::move(c));
  return true;
}

}  // namespace

tool_call_format tool_call_format_of_template(std::string_view source) {
  if (source.find("<tool_call>") != std::string_view::npos) return tool_call_format::hermes;
  if (source.find("\"parameters\": dictionary of argument name") != std::string_view::npos ||
      source.find("<|python_tag|>") != std::string_view::npos)
    return tool_call_format::llama3_json;
  return tool_call_format::none;
}

tool_call_parser::delta tool_call_parser::push(std::string_view text) {
  switch (format_) {
    case tool_call_format::hermes: return push_hermes(text);
    case tool_call_format::llama3_json: return push_llama3(text);
    case tool_call_format::named_arguments: pending_ += text; return {};
    case tool_call_format::none: break;
  }
  return {std::string(text), {}};
}

tool_call_parser::delta tool_call_parser::push_llama3(std::string_view text) {
  delta d;
  if (decided_ && !in_call_) {
    d.content = text;
    return d;
  }
  pending_ += text;
  if (!decided_) {
    const std::size_t at = pending_.find_first_not_of(" \t\r\n");
    if (at == std::string::npos) return d;  // only blanks so far: undecided
    decided_ = true;
    in_call_ = pending_[at] == '{' || pending_[at] == '[';
    if (!in_call_) {
      d.content = std::move(pending_);
      pending_.clear();
    }
  }
  return d;
}

tool_call_parser::delta tool_call_parser::push_hermes(std::string_view text) {
  delta d;
  pending_ += text;
  for (;;) {
    if (!in_call_) {
      const std::size_t at = pending_.find(k_start);
      if (at != std::string::npos) {
        d.content += pending_.substr(0, at);
        pending_.erase(0, at + k_start.size());
        in_call_ = true;
        continue;
      }
      const std::size_t keep = partial_tag_suffix(pending_, k_start);
      d.content += pending_.substr(0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return d;
    }
    const std::size_t at = pending_.find(k_end);
    if (at == std::string::npos) return d;
    const std::string body = pending_.substr(0, at);
    pending_.erase(0, at + k_end.size());
    in_call_ = false;
    tool_call c;
    if (parse_call(body, c)) d.calls.push_back(std::move(c));
    else d.content += std::string(k_start) + body + std::string(k_end);
  }
}

tool_call_parser::delta tool_call_parser::flush() {
  delta d;
  if (format_ == tool_call_format::named_arguments) {
    tool_call c;
    c.id = "chatcmpl-tool-" + random_uuid_hex();
    c.name = name_;
    const json args = parse_json_or_discarded(pending_);
    c.arguments = args.is_object() ? dump_json(args) : pending_;
    d.calls.push_back(std::move(c));
    pending_.clear();
    return d;
  }
  if (format_ == tool_call_format::llama3_json) {
    if (!in_call_ || !parse_llama3(pending_, d.calls)) d.content = std::move(pending_);
    pending_.clear();
    in_call_ = decided_ = false;
    return d;
  }
  if (in_call_) {
    tool_call c;
    if (parse_call(pending_, c)) d.calls.push_back(std::move(c));
    else d.content = std::string(k_start) + pending_;
  } else {
    d.content = pending_;
  }
  pending_.clear();
  in_call_ = false;
  return d;
}

}  // namespace vks::api
