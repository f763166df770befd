// Tool-call extraction: format detection, the block and whole-reply engines (tool_calls.hpp).
#include "api/tool_calls.hpp"

#include <algorithm>
#include <array>

#include "api/json_parse.hpp"
#include "api/tool_call_syntax.hpp"

namespace vks::api {

namespace {

// Length of the longest suffix of `s` that is a proper prefix of `tag`.
std::size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (std::size_t k = std::min(s.size(), tag.size() - 1); k > 0; --k)
    if (s.substr(s.size() - k) == tag.substr(0, k)) return k;
  return 0;
}

struct format_name {
  tool_call_format format;
  std::string_view name;
};
constexpr std::array<format_name, 18> k_names{{
    {tool_call_format::none, "none"},           {tool_call_format::hermes, "hermes"},
    {tool_call_format::llama3_json, "llama3_json"}, {tool_call_format::named_arguments, "named_arguments"},
    {tool_call_format::qwen3_xml, "qwen3_xml"}, {tool_call_format::glm, "glm"},
    {tool_call_format::deepseek, "deepseek"},   {tool_call_format::kimi, "kimi"},
    {tool_call_format::mistral, "mistral"},     {tool_call_format::granite, "granite"},
    {tool_call_format::gemma4, "gemma4"},       {tool_call_format::pythonic, "pythonic"},
    {tool_call_format::harmony, "harmony"},     {tool_call_format::minimax, "minimax"},
    {tool_call_format::functionary_v3_1, "functionary_v3_1"}, {tool_call_format::functionary_v3_2, "functionary_v3_2"},
    {tool_call_format::seed_oss, "seed_oss"}, {tool_call_format::lfm2, "lfm2"},
}};

bool whole_reply(tool_call_format f) {
  return f == tool_call_format::llama3_json || f == tool_call_format::pythonic;
}

}  // namespace

const std::vector<tool_format_rule>& tool_format_rules() {
  // Most specific first: several templates also contain a later rule's marker.
  static const std::vector<tool_format_rule> rules{
      {tool_call_format::harmony, "<|channel|>"},
      {tool_call_format::kimi, "<|tool_calls_section_begin|>"},
      {tool_call_format::deepseek, "<｜tool▁calls▁begin｜>"},
      {tool_call_format::seed_oss, "<seed:tool_call>"},
      {tool_call_format::qwen3_xml, "<parameter="},
      {tool_call_format::glm, "<arg_key>"},
      {tool_call_format::minimax, "<minimax:tool_call>"},
      {tool_call_format::functionary_v3_2, ">>>${recipient}"},
      {tool_call_format::functionary_v3_1, "start_tag => `<function`"},
      {tool_call_format::lfm2, "<|tool_call_start|>"},
      {tool_call_format::lfm2, "<|tool_list_start|>"},
      {tool_call_format::gemma4, "<|tool_call>"},
      {tool_call_format::granite, "<|tool_call|>"},
      {tool_call_format::mistral, "[TOOL_CALLS]"},
      {tool_call_format::hermes, "<tool_call>"},
      {tool_call_format::pythonic, "[func_name1(params_name1=params_value1"},
      {tool_call_format::llama3_json, "\"parameters\": dictionary of argument name"},
      {tool_call_format::llama3_json, "<|python_tag|>"},
  };
  return rules;
}

tool_call_format tool_call_format_of_template(std::string_view source) {
  for (const auto& r : tool_format_rules())
    if (source.find(r.marker) != std::string_view::npos) return r.format;
  return tool_call_format::none;
}

std::optional<tool_call_format> tool_call_format_from_name(std::string_view name) {
  for (const auto& n : k_names)
    if (n.name == name) return n.format;
  return std::nullopt;
}

std::string_view to_string(tool_call_format f) {
  for (const auto& n : k_names)
    if (n.format == f) return n.name;
  return "none";
}

bool tool_format_needs_special_tokens(tool_call_format f) {
  switch (f) {
    case tool_call_format::harmony:
    case tool_call_format::kimi:
    case tool_call_format::deepseek:
    case tool_call_format::mistral:
    case tool_call_format::granite:
    case tool_call_format::gemma4:
    case tool_call_format::seed_oss:
    case tool_call_format::lfm2: return true;
    default: return false;
  }
}

bool template_takes_text_arguments(tool_call_format f) { return f == tool_call_format::functionary_v3_2; }

json text_arguments_history(const json& messages) {
  json out = messages;
  if (!out.is_array()) return out;
  for (auto& m : out) {
    if (!m.is_object() || !m.contains("tool_calls") || !m["tool_calls"].is_array()) continue;
    for (auto& c : m["tool_calls"]) {
      if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
      auto& fn = c["function"];
      if (fn.contains("arguments") && !fn["arguments"].is_string()) fn["arguments"] = dump_json(fn["arguments"]);
    }
  }
  return out;
}

tool_catalog tool_catalog::from_tools(const json& tools) {
  tool_catalog c;
  if (!tools.is_array()) return c;
  for (const auto& t : tools) {
    if (!t.is_object()) continue;
    auto f = t.find("function");
    if (f == t.end() || !f->is_object()) continue;
    auto n = f->find("name");
    if (n == f->end() || !n->is_string()) continue;
    auto p = f->find("parameters");
    c.parameters[n->get<std::string>()] = p == f->end() ? json() : *p;
  }
  return c;
}

const json* tool_catalog::parameter_schema(std::string_view fn, std::string_view param) const {
  auto f = parameters.find(fn);
  if (f == parameters.end() || !f->second.is_object()) return nullptr;
  auto props = f->second.find("properties");
  if (props == f->second.end() || !props->is_object()) return nullptr;
  auto p = props->find(std::string(param));
  return p == props->end() ? nullptr : &*p;
}

tool_call_parser::delta tool_call_parser::push(std::string_view text) {
  if (format_ == tool_call_format::named_arguments) {
    pending_ += text;
    return {};
  }
  if (whole_reply(format_)) return push_whole_reply(text);
  if (format_ == tool_call_format::functionary_v3_2) return push_recipients(text);
  if (syntax::block_syntax_of(format_)) return push_blocks(text);
  return {std::string(text), {}, {}};
}

// llama3_json / pythonic: hold the reply back when its first non-blank text opens the form.
tool_call_parser::delta tool_call_parser::push_whole_reply(std::string_view text) {
  delta d;
  if (decided_ && !in_call_) {
    d.content = text;
    return d;
  }
  pending_ += text;
  if (!decided_) {
    const std::size_t at = pending_.find_first_not_of(" \t\r\n");
    if (at == std::string::npos) return d;  // only blanks so far: undecided
    if (format_ == tool_call_format::pythonic) {
      constexpr std::string_view tag = "<|python_start|>";
      const std::string_view rest = std::string_view(pending_).substr(at);
      if (rest.size() < tag.size() && tag.substr(0, rest.size()) == rest) return d;  // may become the tag
      in_call_ = rest.front() == '[' || rest.substr(0, tag.size()) == tag;
    } else {
      in_call_ = pending_[at] == '{' || pending_[at] == '[';
    }
    decided_ = true;
    if (!in_call_) {
      d.content = std::move(pending_);
      pending_.clear();
    }
  }
  return d;
}

tool_call_parser::delta tool_call_parser::push_blocks(std::string_view text) {
  const auto& sx = *syntax::block_syntax_of(format_);
  delta d;
  pending_ += text;
  for (;;) {
    if (!in_call_) {
      const std::size_t at = pending_.find(sx.start);
      if (at != std::string::npos) {
        d.content += pending_.substr(0, at);
        pending_.erase(0, at + sx.start.size());
        in_call_ = true;
        continue;
      }
      const std::size_t keep = partial_tag_suffix(pending_, sx.start);
      d.content += pending_.substr(0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return d;
    }
    if (sx.end.empty()) return d;  // the block runs to the end of the text
    const std::size_t at = pending_.find(sx.end);
    if (at == std::string::npos) return d;
    const std::string body = pending_.substr(0, at);
    pending_.erase(0, at + sx.end.size());
    in_call_ = false;
    judge(body, std::string(sx.start) + body + std::string(sx.end), false, d);
  }
}

bool tool_call_parser::accept(std::vector<tool_call>& calls, std::string& why) {
  if (opts_.tools)
    for (const auto& c : calls)
      if (!opts_.tools->offers(c.name)) {
        why = "a call of \"" + c.name + "\", which is not among the offered tools, was kept as content";
        return false;
      }
  if (!opts_.parallel && n_calls_ + calls.size() > 1) {
    why = "parallel_tool_calls is false: a call after the first was kept as content";
    return false;
  }
  n_calls_ += static_cast<int>(calls.size());
  return true;
}

void tool_call_parser::judge(std::string_view body, std::string_view raw, bool at_end, delta& d) {
  const auto& sx = *syntax::block_syntax_of(format_);
  auto calls = sx.parse(body, opts_.tools.get());
  std::string why;
  if (!calls) {
    why = std::string(at_end && !sx.end.empty() ? "an unfinished " : "a malformed ") + std::string(to_string(format_)) +
          " tool call was kept as content";
  } else if (accept(*calls, why)) {
    for (auto& c : *calls) d.calls.push_back(std::move(c));
    return;
  }
  d.content += raw;
  if (opts_.warn) d.warnings.push_back(std::move(why));
}

tool_call_parser::delta tool_call_parser::flush() {
  delta d;
  if (format_ == tool_call_format::named_arguments) {
    tool_call c;
    c.id = syntax::new_call_id();
    c.name = name_;
    const json args = parse_json_or_discarded(pending_);
    c.arguments = args.is_object() ? dump_json(args) : pending_;
    d.calls.push_back(std::move(c));
    pending_.clear();
    return d;
  }
  if (whole_reply(format_)) {
    if (in_call_) {
      auto calls = format_ == tool_call_format::pythonic ? syntax::parse_pythonic_reply(pending_)
                                                         : syntax::parse_llama3_reply(pending_);
      std::string why = "a malformed " + std::string(to_string(format_)) + " tool call was kept as content";
      if (calls && accept(*calls, why)) {
        d.calls = std::move(*calls);
      } else {
        d.content = std::move(pending_);
        if (opts_.warn) d.warnings.push_back(std::move(why));
      }
    } else {
      d.content = std::move(pending_);
    }
    pending_.clear();
    in_call_ = decided_ = false;
    return d;
  }
  if (format_ == tool_call_format::functionary_v3_2) return flush_recipients();
  const auto* sx = syntax::block_syntax_of(format_);
  if (sx && in_call_) {
    const std::string body = std::move(pending_);
    judge(body, std::string(sx->start) + body, true, d);
  } else {
    d.content = std::move(pending_);
  }
  pending_.clear();
  in_call_ = false;
  return d;
}

}  // namespace vks::api
