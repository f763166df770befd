#include "api/structured.hpp"

#include <memory>

#include "api/reasoning.hpp"
#include "text/grammar/json_schema.hpp"
#include "text/grammar/matcher.hpp"
#include "text/grammar/parsers.hpp"
#include "text/grammar/structural_tag.hpp"

namespace vks::api {

result<engine::output_constraint> compile_structured(const structured_output& so, std::string after) {
  namespace g = text::grammar;
  using k = structured_output::kind;
  g::json_grammar_options opt;
  opt.any_whitespace = so.any_whitespace;
  opt.allow_additional_properties = so.additional_properties;
  opt.whitespace_pattern = so.whitespace_pattern;
  result<g::grammar> gr = fail(errc::internal, "unreachable");
  switch (so.k) {
    case k::json_schema: gr = g::compile_json_schema(so.value, opt); break;
    case k::json_object: gr = g::json_object_grammar(opt); break;
    case k::regex: gr = g::parse_regex(so.value.get<std::string>()); break;
    case k::grammar: gr = g::parse_gbnf(so.value.get<std::string>()); break;
    case k::choice: {
      std::vector<std::string> choices;
      for (const auto& c : so.value) choices.push_back(c.get<std::string>());
      gr = g::choice_grammar(choices);
      break;
    }
    case k::structural_tag: gr = g::compile_structural_tag(*so.tag, opt); break;
    case k::built: gr = *so.built; break;
  }
  if (!gr) return fail(errc::invalid_argument, gr.error().message, "structured_outputs");
  auto grammar = std::make_shared<const g::grammar>(std::move(*gr));
  // A grammar whose start alone is past the matcher's caps is refused here (400), not
  // in the engine; the caps bound this probe's work.
  if (g::matcher probe(grammar); probe.failed()) return fail(errc::invalid_argument, probe.error(), "structured_outputs");
  return engine::output_constraint{std::move(grammar), std::move(after), so.special_texts};
}

std::optional<structured_output> tool_choice_constraint(const chat_request& r) {
  if (r.tool_choice != tool_choice_mode::named && r.tool_choice != tool_choice_mode::required) return std::nullopt;
  auto params_of = [](const json& fn) {
    auto p = fn.find("parameters");
    return p != fn.end() && (p->is_object() || p->is_boolean()) ? *p : json{{"type", "object"}};
  };
  structured_output so;
  so.k = structured_output::kind::json_schema;
  if (r.tool_choice == tool_choice_mode::named) {
    for (const auto& tool : r.tools)
      if (tool["function"]["name"] == r.tool_choice_name) so.value = params_of(tool["function"]);
    return so;
  }
  json branches = json::array();
  for (const auto& tool : r.tools) {
    const json& fn = tool["function"];
    branches.push_back({{"type", "object"},
                        {"properties", {{"name", {{"const", fn["name"]}}}, {"parameters", params_of(fn)}}},
                        {"required", {"name", "parameters"}}});
  }
  so.value = {{"type", "array"}, {"items", {{"anyOf", std::move(branches)}}}, {"minItems", 1}};
  if (!r.parallel_tool_calls) so.value["maxItems"] = 1;
  return so;
}

result<std::optional<engine::output_constraint>> request_constraint(const std::optional<structured_output>& so,
                                                                    bool starts_in_reasoning) {
  if (!so) return std::optional<engine::output_constraint>();
  auto c = compile_structured(*so, starts_in_reasoning ? reasoning_tags{}.end : std::string());
  if (!c) return fail(std::move(c).error());
  return std::optional<engine::output_constraint>(std::move(*c));
}

}  // namespace vks::api
