// Strict tool calls as a structural tag (strict_tools.hpp).
#include "api/strict_tools.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include "api/strict_syntax.hpp"

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
    case strict_form::qwen3_xml: return call_text{"<tool_call>\n<function=" + name + ">\n", "</function>\n</tool_call>"};
    case strict_form::seed_oss:
      return call_text{"<seed:tool_call>\n<function=" + name + ">\n", "</function>\n</seed:tool_call>"};
    case strict_form::glm: return call_text{"<tool_call>" + name, "\n</tool_call>"};
    case strict_form::minimax:
      return call_text{"<minimax:tool_call>\n<invoke name=\"" + name + "\">\n", "</invoke>\n</minimax:tool_call>"};
    case strict_form::gemma4: return call_text{"<|tool_call>call:" + name, "<tool_call|>"};
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
    case strict_form::qwen3_xml:
    case strict_form::glm: return "<tool_call>";
    case strict_form::seed_oss: return "<seed:tool_call>";
    case strict_form::minimax: return "<minimax:tool_call>";
    case strict_form::gemma4: return "<|tool_call>";
    case strict_form::lfm2: return "<|tool_call_start|>";
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
    case strict_form::qwen3_xml: return {"<tool_call>", "</tool_call>"};
    case strict_form::glm: return {"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"};
    case strict_form::seed_oss: return {"<seed:tool_call>", "</seed:tool_call>"};
    case strict_form::minimax: return {"<minimax:tool_call>", "</minimax:tool_call>"};
    case strict_form::gemma4: return {"<|tool_call>", "<tool_call|>", "<|\"|>"};
    case strict_form::lfm2: return {"<|tool_call_start|>", "<|tool_call_end|>"};
    default: return {};
  }
}

namespace g = text::grammar;

// The own-syntax forms' argument syntax (nullopt: a JSON-argument form).
std::optional<arg_syntax> syntax_of(strict_form form) {
  switch (form) {
    case strict_form::qwen3_xml:
    case strict_form::seed_oss: return arg_syntax::qwen3_xml;
    case strict_form::glm: return arg_syntax::glm;
    case strict_form::minimax: return arg_syntax::minimax;
    case strict_form::gemma4: return arg_syntax::gemma4;
    case strict_form::lfm2:
    case strict_form::pythonic: return arg_syntax::python;
    default: return std::nullopt;
  }
}

// A name the pythonic reader takes: letters, digits, _ - and . (not first), not a digit first.
bool python_name(const std::string& n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0])) || n[0] == '.') return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

struct offered_function {
  std::string name;
  json params;
};

// The offered functions the form can write (their arguments build in a scratch builder).
std::vector<offered_function> writable(const chat_request& r, arg_syntax syntax) {
  std::vector<offered_function> out;
  for (const auto& tool : r.tools) {
    const json& fn = tool["function"];
    offered_function f{fn["name"].get<std::string>(), fn.contains("parameters") ? fn["parameters"] : json()};
    if (!raw_name(f.name) || (syntax == arg_syntax::python && !python_name(f.name))) continue;
    g::builder scratch;
    if (!add_call_arguments(scratch, syntax, f.name, f.params, {})) continue;
    out.push_back(std::move(f));
  }
  return out;
}

// One call of any of `fns`, or several separated by ", " when parallel (python syntax).
result<g::element> python_call_list(g::builder& b, const std::vector<offered_function>& fns, bool parallel,
                                    const g::json_grammar_options& opt) {
  std::vector<g::sequence> alts;
  for (const auto& f : fns) {
    auto c = add_call_arguments(b, arg_syntax::python, f.name, f.params, opt);
    if (!c) return c;
    alts.push_back({*c});
  }
  const g::element one = b.group(std::move(alts), "call");
  if (!parallel) return one;
  const std::uint32_t more = b.fresh("calls");
  g::sequence again;
  g::builder::append_literal(again, ",");
  again.push_back(b.group({{}, {g::element::one(' ')}}, "sp"));
  again.push_back(one);
  again.push_back(g::element::ref(more));
  b.add_alt(more, std::move(again));
  b.add_alt(more, {});
  return b.group({{one, g::element::ref(more)}}, "calls");
}

// pythonic: blanks, then either "[" calls "]" and blanks, or free text not starting with "[".
result<g::grammar> pythonic_grammar(const std::vector<offered_function>& fns, bool parallel) {
  g::builder b;
  const g::json_grammar_options opt;
  auto calls = python_call_list(b, fns, parallel, opt);
  if (!calls) return fail(std::move(calls).error());
  const std::vector<g::char_range> blank{{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}};
  const std::uint32_t blanks = b.fresh("blanks"), text = b.fresh("text"), rest = b.fresh("rest");
  b.add_alt(blanks, {g::element::chars(blank), g::element::ref(blanks)});
  b.add_alt(blanks, {});
  b.add_alt(text, {g::element::any(), g::element::ref(text)});
  b.add_alt(text, {});
  b.add_alt(rest, {});
  b.add_alt(rest, {g::element::one('['), *calls, g::element::one(']'), g::element::ref(blanks)});
  std::vector<g::char_range> not_first = blank;
  not_first.push_back({'[', '['});
  b.add_alt(rest, {g::element::chars(not_first, true), g::element::ref(text)});
  const std::uint32_t root = b.rule_id("root");
  b.add_alt(root, {g::element::ref(blanks), g::element::ref(rest)});
  return std::move(b).finish(root);
}

// The own-syntax forms: one structure per writable function (lfm2: one for the call list),
// or pythonic's whole-reply grammar.
std::optional<structured_output> own_syntax_constraint(const chat_request& r, strict_form form, arg_syntax syntax) {
  auto fns = writable(r, syntax);
  if (fns.empty()) return std::nullopt;
  structured_output so;
  so.special_texts = specials_of(form);
  if (form == strict_form::pythonic) {
    auto gr = pythonic_grammar(fns, r.parallel_tool_calls);
    if (!gr) return std::nullopt;
    so.k = structured_output::kind::built;
    so.built = std::make_shared<const g::grammar>(std::move(*gr));
    return so;
  }
  g::structural_tag tag;
  tag.triggers = {trigger_of(form)};
  if (form == strict_form::lfm2) {
    g::tag_structure s;
    s.begin = "<|tool_call_start|>[";
    s.end = "]<|tool_call_end|>";
    s.body = [fns, parallel = r.parallel_tool_calls](g::builder& b, const g::json_grammar_options& opt) {
      return python_call_list(b, fns, parallel, opt);
    };
    tag.structures.push_back(std::move(s));
  } else {
    for (auto& f : fns) {
      auto call = call_of(form, f.name);
      if (!call) continue;
      g::tag_structure s;
      s.begin = std::move(call->begin);
      s.end = std::move(call->end);
      s.body = [syntax, f](g::builder& b, const g::json_grammar_options& opt) {
        return add_call_arguments(b, syntax, f.name, f.params, opt);
      };
      tag.structures.push_back(std::move(s));
    }
  }
  so.k = structured_output::kind::structural_tag;
  so.tag = std::move(tag);
  return so;
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
    case tool_call_format::qwen3_xml: return strict_form::qwen3_xml;
    case tool_call_format::seed_oss: return strict_form::seed_oss;
    case tool_call_format::glm: return strict_form::glm;
    case tool_call_format::minimax: return strict_form::minimax;
    case tool_call_format::gemma4: return strict_form::gemma4;
    case tool_call_format::lfm2: return strict_form::lfm2;
    case tool_call_format::pythonic: return strict_form::pythonic;
    default: return strict_form::none;
  }
}

std::optional<structured_output> strict_tools_constraint(const chat_request& r, strict_form form) {
  if (form == strict_form::none || !r.tools.is_array() || r.tools.empty()) return std::nullopt;
  if (auto syntax = syntax_of(form)) return own_syntax_constraint(r, form, *syntax);
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
