// Structural-tag request objects (structural_tag.hpp).
#include "api/structural_tag.hpp"

#include "api/json_parse.hpp"

namespace vks::api {

namespace {

unexpected bad(const std::string& param, const std::string& message) {
  return fail(errc::invalid_argument, message, param);
}

result<text::grammar::tag_structure> parse_structure(const json& s, const std::string& name) {
  if (!s.is_object()) return bad(name, name + " must be an object with `begin`, `schema` and `end`.");
  text::grammar::tag_structure out;
  for (const auto& [key, dest] : {std::pair{"begin", &out.begin}, std::pair{"end", &out.end}}) {
    auto it = s.find(key);
    if (it == s.end() || !it->is_string()) return bad(name + "." + key, name + "." + key + " must be a string.");
    *dest = it->get<std::string>();
  }
  auto schema = s.find("schema");
  if (schema == s.end() || !(schema->is_object() || schema->is_boolean()))
    return bad(name + ".schema", name + ".schema must be a JSON schema object.");
  out.schema = *schema;
  return out;
}

}  // namespace

result<text::grammar::structural_tag> parse_structural_tag(const json& value, const std::string& param) {
  json parsed;
  const json* v = &value;
  if (value.is_string()) {
    auto r = parse_json(value.get<std::string>());
    if (!r) return bad(param, json_string_error(param, r.error()));
    parsed = std::move(*r);
    v = &parsed;
  }
  if (!v->is_object()) return bad(param, param + " must be an object with `structures` and `triggers`.");
  if (!v->contains("structures") && v->contains("format"))
    return fail(errc::unsupported, "The structural_tag `format` form is not supported; give `structures` and `triggers`.",
                param);
  text::grammar::structural_tag tag;
  auto structures = v->find("structures");
  if (structures == v->end() || !structures->is_array())
    return bad(param + ".structures", param + ".structures must be a list of {begin, schema, end} objects.");
  for (std::size_t i = 0; i < structures->size(); ++i) {
    auto s = parse_structure((*structures)[i], param + ".structures[" + std::to_string(i) + "]");
    if (!s) return fail(std::move(s).error());
    tag.structures.push_back(std::move(*s));
  }
  auto triggers = v->find("triggers");
  if (triggers == v->end() || !triggers->is_array())
    return bad(param + ".triggers", param + ".triggers must be a list of strings.");
  for (const auto& t : *triggers) {
    if (!t.is_string()) return bad(param + ".triggers", param + ".triggers must be a list of strings.");
    tag.triggers.push_back(t.get<std::string>());
  }
  if (auto ok = text::grammar::validate(tag); !ok) {
    const auto& e = ok.error();
    return bad(param + "." + e.param, param + "." + e.message + ".");
  }
  return tag;
}

}  // namespace vks::api
