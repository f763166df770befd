// Argument grammars in the non-JSON tool formats' own syntax (strict_syntax.hpp).
#include "api/strict_syntax.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

// `var` = the element of a result<element> expression, or return its error.
#define TRY_ELEM(var, expr)                                       \
  auto var##_r = (expr);                                          \
  if (!var##_r) return ::vks::fail(std::move(var##_r).error());   \
  const element var = *var##_r

namespace vks::api {

namespace {

namespace g = text::grammar;
using g::builder;
using g::element;
using g::sequence;

constexpr int k_max_depth = 8;  // gemma4 values nested deeper are any value

sequence lit(std::string_view s) {
  sequence q;
  builder::append_literal(q, s);
  return q;
}

void append(sequence& a, const sequence& b) { a.insert(a.end(), b.begin(), b.end()); }

element opt_newline(builder& b) { return b.group({{}, lit("\n")}, "nl"); }

std::string type_of(const json& s) {
  if (!s.is_object()) return {};
  auto t = s.find("type");
  return t != s.end() && t->is_string() ? t->get<std::string>() : std::string();
}

// A property's schema with the parameters' $defs/definitions beside it, so that its
// "#/$defs/..." references resolve as they did in the whole schema.
json with_defs(const json& prop, const json& params) {
  if (!prop.is_object()) return prop;
  json out = prop;
  for (const char* k : {"$defs", "definitions"})
    if (params.is_object() && params.contains(k) && !out.contains(k)) out[k] = params[k];
  return out;
}

// The enum/const strings of a string schema (empty: any text).
std::vector<std::string> string_choices(const json& s) {
  std::vector<std::string> out;
  if (auto c = s.find("const"); c != s.end() && c->is_string()) out.push_back(c->get<std::string>());
  if (auto e = s.find("enum"); e != s.end() && e->is_array())
    for (const auto& v : *e)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

bool ident_char(char c, bool first, std::string_view extra) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalpha(u) || c == '_' || (!first && (std::isdigit(u) || extra.find(c) != std::string_view::npos));
}
bool identifier(const std::string& k, std::string_view extra) {
  if (k.empty() || !ident_char(k[0], true, extra)) return false;
  for (char c : k)
    if (!ident_char(c, false, extra)) return false;
  return true;
}

// [A-Za-z_][A-Za-z0-9_<extra>]* as a rule.
element identifier_rule(builder& b, std::string_view extra, std::string_view hint) {
  std::vector<g::char_range> first{{'A', 'Z'}, {'a', 'z'}, {'_', '_'}}, rest = first;
  rest.push_back({'0', '9'});
  for (char c : extra) rest.push_back({static_cast<char32_t>(c), static_cast<char32_t>(c)});
  const std::uint32_t tail = b.fresh(hint);
  b.add_alt(tail, {element::chars(rest), element::ref(tail)});
  b.add_alt(tail, {});
  return b.group({{element::chars(first), element::ref(tail)}}, hint);
}

// Items in order, the optional ones skippable, `sep` between those present:
// first_i ::= item_i rest_{i+1} | first_{i+1} (optional); rest_i ::= sep item_i rest_{i+1} | rest_{i+1} (optional).
struct item {
  sequence text;
  bool required = false;
};
element ordered_items(builder& b, const std::vector<item>& items, const sequence& sep) {
  const std::size_t n = items.size();
  std::vector<std::uint32_t> first(n + 1), rest(n + 1);
  for (std::size_t i = 0; i <= n; ++i) {
    first[i] = b.fresh("params");
    rest[i] = b.fresh("params");
  }
  b.add_alt(first[n], {});
  b.add_alt(rest[n], {});
  for (std::size_t i = 0; i < n; ++i) {
    sequence f = items[i].text, r = sep;
    f.push_back(element::ref(rest[i + 1]));
    append(r, items[i].text);
    r.push_back(element::ref(rest[i + 1]));
    b.add_alt(first[i], std::move(f));
    b.add_alt(rest[i], std::move(r));
    if (!items[i].required) {
      b.add_alt(first[i], {element::ref(first[i + 1])});
      b.add_alt(rest[i], {element::ref(rest[i + 1])});
    }
  }
  return element::ref(first[0]);
}

// Zero or more `one`, `sep` between them.
element any_number(builder& b, const sequence& one, const sequence& sep) {
  const std::uint32_t more = b.fresh("more");
  sequence again = sep;
  append(again, one);
  again.push_back(element::ref(more));
  b.add_alt(more, std::move(again));
  b.add_alt(more, {});
  sequence some = one;
  some.push_back(element::ref(more));
  return b.group({{}, std::move(some)}, "list");
}

// ---- gemma4 values ----

constexpr std::string_view k_quote = "<|\"|>";

element gemma_string(builder& b) {
  sequence s = lit(k_quote);
  s.push_back(b.text_until(k_quote, "gstr"));
  return b.group({std::move(s)}, "gstr");
}

// -?[0-9]{1,16}(.[0-9]{1,16})? (no exponent: gemma_to_json reads letters as words).
result<element> gemma_number(builder& b, bool integer) {
  TRY_ELEM(digits, b.repeat({element::chars({{'0', '9'}})}, 1, 16, "digits"));
  sequence s{b.group({{}, lit("-")}, "sign"), digits};
  if (!integer) {
    sequence frac = lit(".");
    frac.push_back(digits);
    s.push_back(b.group({{}, std::move(frac)}, "frac"));
  }
  return b.group({std::move(s)}, integer ? "gint" : "gnum");
}

// Any gemma4 value (object: any object), rules shared per builder.
result<element> gemma_any(builder& b, bool object = false) {
  if (auto r = b.find(object ? "gemma_any_object" : "gemma_any"); r && b.defined(*r)) return element::ref(*r);
  const std::uint32_t any = b.rule_id("gemma_any"), any_obj = b.rule_id("gemma_any_object");
  TRY_ELEM(num, gemma_number(b, false));
  b.add_alt(any, {gemma_string(b)});
  b.add_alt(any, {num});
  for (auto w : {"true", "false", "null"}) b.add_alt(any, lit(w));
  sequence arr = lit("[");
  arr.push_back(any_number(b, {element::ref(any)}, lit(",")));
  append(arr, lit("]"));
  b.add_alt(any, std::move(arr));
  sequence member{identifier_rule(b, "_-.", "gkey")};
  append(member, lit(":"));
  member.push_back(element::ref(any));
  sequence obj = lit("{");
  obj.push_back(any_number(b, member, lit(",")));
  append(obj, lit("}"));
  b.add_alt(any_obj, std::move(obj));
  b.add_alt(any, {element::ref(any_obj)});
  return element::ref(object ? any_obj : any);
}

result<element> gemma_value(builder& b, const json& s, int depth);

// {key:value,...} for an object schema with properties; nullopt-like error when a
// required key cannot be written bare.
result<element> gemma_object(builder& b, const json& s, int depth) {
  auto props = s.find("properties");
  if (props == s.end() || !props->is_object()) return gemma_any(b, true);
  const json req = s.value("required", json::array());
  std::vector<item> items;
  for (const auto& [key, ps] : props->items()) {
    const bool required = req.is_array() && std::find(req.begin(), req.end(), json(key)) != req.end();
    if (!identifier(key, "_-.")) {
      if (required) return fail(errc::invalid_argument, "parameter `" + key + "` cannot be written as a gemma4 key");
      continue;
    }
    TRY_ELEM(v, gemma_value(b, ps, depth + 1));
    sequence t = lit(key + ":");
    t.push_back(v);
    items.push_back({std::move(t), required});
  }
  sequence obj = lit("{");
  obj.push_back(ordered_items(b, items, lit(",")));
  append(obj, lit("}"));
  return b.group({std::move(obj)}, "gobj");
}

result<element> gemma_typed(builder& b, const json& s, const std::string& type, int depth) {
  if (type == "string") {
    const auto choices = string_choices(s);
    if (choices.empty()) return gemma_string(b);
    std::vector<sequence> alts;
    for (const auto& c : choices) alts.push_back(lit(std::string(k_quote) + c + std::string(k_quote)));
    return b.group(std::move(alts), "genum");
  }
  if (type == "integer" || type == "number") return gemma_number(b, type == "integer");
  if (type == "boolean") return b.group({lit("true"), lit("false")}, "gbool");
  if (type == "null") return b.group({lit("null")}, "gnull");
  if (type == "object") return gemma_object(b, s, depth);
  if (type == "array") {
    auto items = s.find("items");
    result<element> one = items != s.end() && items->is_object() ? gemma_value(b, *items, depth + 1) : gemma_any(b);
    if (!one) return one;
    sequence arr = lit("[");
    arr.push_back(any_number(b, {*one}, lit(",")));
    append(arr, lit("]"));
    return b.group({std::move(arr)}, "garr");
  }
  return gemma_any(b);
}

result<element> gemma_value(builder& b, const json& s, int depth) {
  if (!s.is_object() || depth > k_max_depth) return gemma_any(b);
  for (const char* k : {"anyOf", "oneOf"})
    if (auto a = s.find(k); a != s.end() && a->is_array() && !a->empty()) {
      std::vector<sequence> alts;
      for (const auto& sub : *a) {
        TRY_ELEM(v, gemma_value(b, sub, depth + 1));
        alts.push_back({v});
      }
      return b.group(std::move(alts), "gany");
    }
  if (auto t = s.find("type"); t != s.end() && t->is_array()) {
    std::vector<sequence> alts;
    for (const auto& ty : *t)
      if (ty.is_string()) {
        TRY_ELEM(v, gemma_typed(b, s, ty.get<std::string>(), depth));
        alts.push_back({v});
      }
    if (!alts.empty()) return b.group(std::move(alts), "gtypes");
  }
  std::string type = type_of(s);
  if (type.empty() && s.contains("properties")) type = "object";
  if (type.empty() && !string_choices(s).empty()) type = "string";
  return gemma_typed(b, s, type, depth);
}

// ---- tagged parameters (qwen3_xml, glm, minimax) and python keyword arguments ----

struct tagged_form {
  std::string_view open, mid, close, after;  // open key mid value close after
  std::string_view key_forbidden;            // characters a key may not hold
};
tagged_form tagged_of(arg_syntax s) {
  switch (s) {
    case arg_syntax::glm: return {"\n<arg_key>", "</arg_key>\n<arg_value>", "</arg_value>", "", "<>"};
    case arg_syntax::minimax: return {"<parameter name=\"", "\">", "</parameter>", "\n", "\"<>"};
    default: return {"<parameter=", ">", "</parameter>", "\n", "<>\n"};
  }
}

// A tagged value and its closing tag.
// wrapped: the value may sit on its own line (Qwen3 XML: the parser drops one newline
// after the open tag and one before the close).
result<element> tagged_value(builder& b, const json& ps, const json& params, std::string_view close, bool wrapped,
                             const g::json_grammar_options& opt) {
  if (type_of(ps) == "string") {
    const auto choices = string_choices(ps);
    if (choices.empty()) return b.text_until(close, "tval");
    std::vector<sequence> alts;
    for (const auto& c : choices) {
      sequence alt;
      if (wrapped) alt.push_back(opt_newline(b));
      append(alt, lit(c));
      if (wrapped) alt.push_back(opt_newline(b));
      append(alt, lit(close));
      alts.push_back(std::move(alt));
    }
    return b.group(std::move(alts), "tenum");
  }
  auto doc = g::add_json_schema(b, with_defs(ps.is_object() || ps.is_boolean() ? ps : json::object(), params), opt);
  if (!doc) return doc;
  sequence s{*doc, opt_newline(b)};
  append(s, lit(close));
  return b.group({std::move(s)}, "tjson");
}

result<element> tagged_arguments(builder& b, arg_syntax syntax, const json& params, const g::json_grammar_options& opt) {
  const tagged_form f = tagged_of(syntax);
  auto props = params.is_object() ? params.find("properties") : params.end();
  if (!params.is_object() || props == params.end() || !props->is_object()) {
    // Any parameters: a key without the forbidden characters, any value.
    sequence one = lit(f.open);
    one.push_back(b.text_until(f.mid, "tkey"));
    one.push_back(b.text_until(f.close, "tval"));
    append(one, lit(f.after));
    return any_number(b, one, {});
  }
  const json req = params.value("required", json::array());
  std::vector<item> items;
  for (const auto& [key, ps] : props->items()) {
    const bool required = req.is_array() && std::find(req.begin(), req.end(), json(key)) != req.end();
    if (key.empty() || key.find_first_of(f.key_forbidden) != std::string::npos || key.find(f.mid) != std::string::npos) {
      if (required) return fail(errc::invalid_argument, "parameter `" + key + "` cannot be written in this format");
      continue;
    }
    TRY_ELEM(v, tagged_value(b, ps, params, f.close, syntax == arg_syntax::qwen3_xml, opt));
    sequence t = lit(std::string(f.open) + key + std::string(f.mid));
    t.push_back(v);
    append(t, lit(f.after));
    items.push_back({std::move(t), required});
  }
  return ordered_items(b, items, {});
}

result<element> python_call(builder& b, const std::string& name, const json& params, const g::json_grammar_options& opt) {
  sequence call = lit(name + "(");
  auto props = params.is_object() ? params.find("properties") : params.end();
  if (!params.is_object() || props == params.end() || !props->is_object()) {
    TRY_ELEM(v, g::add_json_schema(b, json::object(), opt));  // any JSON value
    sequence one{identifier_rule(b, "_", "pkey")};
    append(one, lit("="));
    one.push_back(v);
    call.push_back(any_number(b, one, lit(", ")));
  } else {
    const json req = params.value("required", json::array());
    std::vector<item> items;
    for (const auto& [key, ps] : props->items()) {
      const bool required = req.is_array() && std::find(req.begin(), req.end(), json(key)) != req.end();
      if (!identifier(key, "_")) {
        if (required) return fail(errc::invalid_argument, "parameter `" + key + "` is not a Python keyword argument");
        continue;
      }
      TRY_ELEM(v, g::add_json_schema(b, with_defs(ps.is_object() || ps.is_boolean() ? ps : json::object(), params), opt));
      sequence t = lit(key + "=");
      t.push_back(v);
      items.push_back({std::move(t), required});
    }
    call.push_back(ordered_items(b, items, lit(", ")));
  }
  append(call, lit(")"));
  return b.group({std::move(call)}, "pcall");
}

}  // namespace

result<g::element> add_call_arguments(builder& b, arg_syntax syntax, const std::string& name, const json& params,
                                      const g::json_grammar_options& opt) {
  switch (syntax) {
    case arg_syntax::gemma4: {
      json obj = params.is_object() ? params : json::object();
      if (!obj.contains("type")) obj["type"] = "object";
      if (type_of(obj) != "object") obj = json{{"type", "object"}};
      return gemma_object(b, obj, 0);
    }
    case arg_syntax::python: return python_call(b, name, params, opt);
    default: return tagged_arguments(b, syntax, params, opt);
  }
}

}  // namespace vks::api
