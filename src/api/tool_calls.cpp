// Hermes-format tool-call extraction (tool_calls.hpp).
#include "api/tool_calls.hpp"

#include <algorithm>

#include "api/json.hpp"
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
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return false;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  json a = json::object();
  if (args != j.end()) {
    if (args->is_object()) {
      a = *args;
    } else if (args->is_string()) {
      a = json::parse(args->get<std::string>(), nullptr, false);
      if (!a.is_object()) return false;
    } else {
      return false;
    }
  }
  out.id = "chatcmpl-tool-" + random_uuid_hex();
  out.name = name->get<std::string>();
  out.arguments = dump_json(a);
  return true;
}

}  // namespace

tool_call_parser::delta tool_call_parser::push(std::string_view text) {
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
