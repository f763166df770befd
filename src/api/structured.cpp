#include "api/structured.hpp"

#include <memory>

#include "api/reasoning.hpp"
#include "text/grammar/json_schema.hpp"
#include "text/grammar/parsers.hpp"

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
    case k::structural_tag:
      return fail(errc::unsupported, "structured output of kind structural_tag is not supported", "structured_outputs");
  }
  if (!gr) return fail(errc::invalid_argument, gr.error().message, "structured_outputs");
  return engine::output_constraint{std::make_shared<const g::grammar>(std::move(*gr)), std::move(after)};
}

result<std::optional<engine::output_constraint>> request_constraint(const std::optional<structured_output>& so,
                                                                    bool starts_in_reasoning) {
  if (!so) return std::optional<engine::output_constraint>();
  auto c = compile_structured(*so, starts_in_reasoning ? reasoning_tags{}.end : std::string());
  if (!c) return fail(std::move(c).error());
  return std::optional<engine::output_constraint>(std::move(*c));
}

}  // namespace vks::api
