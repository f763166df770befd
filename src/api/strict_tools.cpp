// Strict tool calls as a structural tag (strict_tools.hpp).
#include "api/strict_tools.hpp"

#include <algorithm>
#include <string>

namespace vks::api {

namespace {

// A function name the raw-name forms can write (their parsers take no quoting).
bool raw_name(const std::string& n) {
  return !n.empty() && n.find_first_of(" \t\r\n<>[]{}()\"':|") == std::string::npos;
}

struct call_text {
  std::string begin, end;
};

// The fixed text around the arguments of a call of `name` (nullopt: not writable).
std::optional<call_text> call_of(strict_form form, const std::string& name) {
  const std::string quoted = dump_json(json(name));  // quotes and escapes included
  const bool raw = raw_name(name);
  switch (form) {
    case strict_form::hermes: return call_text{"<tool_call>\n{\"name\": " + quoted + ", \"arguments\": ", "}\n</tool_call>"};
    case strict_form::granite: return call_text{"<|tool_call|>[{\"name\": " + quoted + ", \"arguments\": ", "}]"};
    case strict_form::mistral_v3: return call_text{"[TOOL_CALLS][{\"name\": " + quoted + ", \"arguments\": ", "}]"};
    case strict_form::llama3_json: return call_text{"{\"name\": " + quoted + ", \"parameters\": ", "}"};
    default: break;
  }
  if (!raw) return std::nullopt;
  switch (form) {
    case strict_form::mistral_v11: return call_text{"[TOOL_CALLS]" + name + "[ARGS]", ""};
    case strict_form::deepseek_r1:
      return call_text{"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n",
                       "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"};
    case strict_form::deepseek_v31:
      return call_text{"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>" + name + "<｜tool▁sep｜>",
                       "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"};
    case strict_form::kimi:
      return call_text{"<|tool_calls_section_begin|><|tool_call_begin|>functions." + name + ":0<|tool_call_argument_begin|>",
                       "<|tool_call_end|><|tool_calls_section_end|>"};
    case strict_form::harmony:
      return call_text{"<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>", "<|call|>"};
    case strict_form::functionary_v3_1: return call_text{"<function=" + name + ">", "</function>"};
    case strict_form::functionary_v3_2: return call_text{">>>" + name + "\n", ""};
    default: return std::nullopt;
  }
}

// The trigger of a form (functionary_v3_2: one per function, its whole begin).
std::string trigger_of(strict_form form) {
  switch (form) {
    case strict_form::hermes: return "<tool_call>";
    case strict_form::granite: return "<|tool_call|>";
    case strict_form::mistral_v3:
    case strict_form::mistral_v11: return "[TOOL_CALLS]";
    case strict_form::deepseek_r1:
    case strict_form::deepseek_v31: return "<｜tool▁calls▁begin｜>";
    case strict_form::kimi: return "<|tool_calls_section_begin|>";
    case strict_form::harmony: return "<|channel|>commentary to=";
    case strict_form::functionary_v3_1: return "<function=";
    case strict_form::llama3_json: return "{\"name\": ";
    default: return {};
  }
}

// The control-token markers a form writes (the engine lets the grammar match them).
std::vector<std::string> specials_of(strict_form form) {
  switch (form) {
    case strict_form::hermes: return {"<tool_call>", "</tool_call>"};
    case strict_form::granite: return {"<|tool_call|>"};
    case strict_form::mistral_v3:
    case strict_form::mistral_v11: return {"[TOOL_CALLS]", "[ARGS]"};
    case strict_form::deepseek_r1:
    case strict_form::deepseek_v31:
      return {"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"};
    case strict_form::kimi:
      return {"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>",
              "<|tool_calls_section_end|>"};
    case strict_form::harmony: return {"<|channel|>", "<|constrain|>", "<|message|>", "<|call|>", "<|end|>", "<|start|>"};
    default: return {};
  }
}

}  // namespace

strict_form strict_form_of(tool_call_format f, std::string_view src) {
  switch (f) {
    case tool_call_format::hermes: return strict_form::hermes;
    case tool_call_format::granite: return strict_form::granite;
    case tool_call_format::mistral:
      return src.find("[ARGS]") != std::string_view::npos ? strict_form::mistral_v11 : strict_form::mistral_v3;
    case tool_call_format::deepseek:
      return src.find("function<｜tool▁sep｜>") != std::string_view::npos ||
                     src.find("'<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>'") != std::string_view::npos ||
                     src.find("tc['type'] + '<｜tool▁sep｜>'") != std::string_view::npos
                 ? strict_form::deepseek_r1
                 : strict_form::deepseek_v31;
    case tool_call_format::kimi: return strict_form::kimi;
    case tool_call_format::harmony: return strict_form::harmony;
    case tool_call_format::functionary_v3_1: return strict_form::functionary_v3_1;
    case tool_call_format::functionary_v3_2: return strict_form::functionary_v3_2;
    case tool_call_format::llama3_json: return strict_form::llama3_json;
    default: return strict_form::none;
  }
}

std::optional<structured_output> strict_tools_constraint(const chat_request& r, strict_form form) {
  if (form == strict_form::none || !r.tools.is_array() || r.tools.empty()) return std::nullopt;
  text::grammar::structural_tag tag;
  const std::string trigger = trigger_of(form);
  if (!trigger.empty()) tag.triggers = {trigger};
  if (form == strict_form::functionary_v3_2) tag.prefix = ">>>";  // the generation prompt's end
  for (const auto& tool : r.tools) {
    const json& fn = tool["function"];
    const std::string name = fn["name"].get<std::string>();
    auto call = call_of(form, name);
    if (!call) continue;  // a name the form cannot write: a call of it stays fail-closed content
    auto p = fn.find("parameters");
    text::grammar::tag_structure s;
    s.schema = p != fn.end() && (p->is_object() || p->is_boolean()) ? *p : json{{"type", "object"}};
    s.begin = std::move(call->begin);
    s.end = std::move(call->end);
    if (form == strict_form::functionary_v3_2 && std::find(tag.triggers.begin(), tag.triggers.end(), s.begin) == tag.triggers.end())
      tag.triggers.push_back(s.begin);
    tag.structures.push_back(std::move(s));
  }
  if (tag.triggers.empty()) return std::nullopt;
  structured_output so;
  so.k = structured_output::kind::structural_tag;
  so.tag = std::move(tag);
  so.special_texts = specials_of(form);
  return so;
}

}  // namespace vks::api
