// Strict tool calls as a structural tag (strict_tools.hpp).
#include "api/strict_tools.hpp"

namespace vks::api {

bool strict_tools_supported(tool_call_format f) {
  return f == tool_call_format::hermes || f == tool_call_format::granite;
}

std::optional<structured_output> strict_tools_constraint(const chat_request& r, tool_call_format f) {
  if (!strict_tools_supported(f) || !r.tools.is_array() || r.tools.empty()) return std::nullopt;
  const bool hermes = f == tool_call_format::hermes;
  const std::string trigger = hermes ? "<tool_call>" : "<|tool_call|>";
  text::grammar::structural_tag tag;
  tag.triggers = {trigger};
  for (const auto& tool : r.tools) {
    const json& fn = tool["function"];
    auto p = fn.find("parameters");
    json schema = p != fn.end() && (p->is_object() || p->is_boolean()) ? *p : json{{"type", "object"}};
    const std::string name = dump_json(fn["name"]);  // a JSON string, quotes and escapes included
    text::grammar::tag_structure s;
    s.begin = trigger + (hermes ? "\n" : "") + (hermes ? "" : "[") + "{\"name\": " + name + ", \"arguments\": ";
    s.schema = std::move(schema);
    s.end = hermes ? "}\n</tool_call>" : "}]";
    tag.structures.push_back(std::move(s));
  }
  structured_output so;
  so.k = structured_output::kind::structural_tag;
  so.tag = std::move(tag);
  return so;
}

}  // namespace vks::api
