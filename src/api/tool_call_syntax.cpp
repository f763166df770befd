// Block bodies of the tool-call formats (tool_call_syntax.hpp).
#include "api/tool_call_syntax.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "api/json_parse.hpp"
#include "api/response_common.hpp"

namespace vks::api::syntax {

namespace {

constexpr auto npos = std::string_view::npos;
constexpr std::string_view k_blank = " \t\r\n";

std::string_view trim(std::string_view s) {
  const auto a = s.find_first_not_of(k_blank);
  if (a == npos) return {};
  return s.substr(a, s.find_last_not_of(k_blank) - a + 1);
}

bool consume(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// The text up to `tag` (removed from s with the tag), or nullopt when s lacks it.
std::optional<std::string_view> take_until(std::string_view& s, std::string_view tag) {
  const auto at = s.find(tag);
  if (at == npos) return std::nullopt;
  auto out = s.substr(0, at);
  s.remove_prefix(at + tag.size());
  return out;
}

// A function name as the formats write them: no blanks, no markup.
bool plain_name(std::string_view n) {
  return !n.empty() && n.find_first_of(" \t\r\n<>[]{}()\"'") == npos;
}

// XML-like values: the templates put the value on its own lines.
std::string_view strip_newlines(std::string_view v) {
  if (v.substr(0, 1) == "\n") v.remove_prefix(1);
  if (v.size() && v.back() == '\n') v.remove_suffix(1);
  return v;
}

tool_call make_call(std::string name, const json& args, std::string id = {}) {
  return {id.empty() ? new_call_id() : std::move(id), std::move(name), dump_json(args)};
}

// Arguments written as JSON text: an object (an empty text is {}).
std::optional<json> json_args(std::string_view text) {
  text = trim(text);
  if (text.empty()) return json::object();
  json a = parse_json_or_discarded(text);
  if (!a.is_object()) return std::nullopt;
  return a;
}

// Length of the JSON object or array at the start of s (strings and escapes respected), or npos.
std::size_t json_extent(std::string_view s) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
      if (depth < 0) return npos;
    } else if (depth == 0 && c != ' ' && c != '\n') return npos;
  }
  return npos;
}

calls hermes_body(std::string_view body, const tool_catalog*) {
  tool_call c;
  if (!json_call(parse_json_or_discarded(body), c)) return std::nullopt;
  return std::vector<tool_call>{std::move(c)};
}

// <function=f> (<parameter=p>v</parameter>)* </function>, one or more.
calls qwen3_xml_body(std::string_view body, const tool_catalog* tools) {
  std::vector<tool_call> out;
  std::string_view s = trim(body);
  while (!s.empty()) {
    if (!consume(s, "<function=")) return std::nullopt;
    auto name = take_until(s, ">");
    auto inner = take_until(s, "</function>");
    if (!name || !inner || !plain_name(*name)) return std::nullopt;
    json args = json::object();
    std::string_view p = trim(*inner);
    while (!p.empty()) {
      if (!consume(p, "<parameter=")) return std::nullopt;
      auto key = take_until(p, ">");
      auto value = take_until(p, "</parameter>");
      if (!key || !value || key->empty()) return std::nullopt;
      const json* schema = tools ? tools->parameter_schema(*name, *key) : nullptr;
      args[std::string(*key)] = typed_value(strip_newlines(*value), schema);
      p = trim(p);
    }
    out.push_back(make_call(std::string(*name), args));
    s = trim(s);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// f (<arg_key>k</arg_key><arg_value>v</arg_value>)*
calls glm_body(std::string_view body, const tool_catalog* tools) {
  std::string_view s = trim(body);
  const auto at = s.find("<arg_key>");
  const std::string_view name = trim(s.substr(0, at));
  if (!plain_name(name)) return std::nullopt;
  json args = json::object();
  s = at == npos ? std::string_view{} : s.substr(at);
  while (!s.empty()) {
    if (!consume(s, "<arg_key>")) return std::nullopt;
    auto key = take_until(s, "</arg_key>");
    s = trim(s);
    if (!key || key->empty() || !consume(s, "<arg_value>")) return std::nullopt;
    auto value = take_until(s, "</arg_value>");
    if (!value) return std::nullopt;
    const json* schema = tools ? tools->parameter_schema(name, *key) : nullptr;
    args[std::string(*key)] = typed_value(*value, schema);
    s = trim(s);
  }
  return std::vector<tool_call>{make_call(std::string(name), args)};
}

// (<｜tool▁call▁begin｜> call <｜tool▁call▁end｜>)*; a call is
// "function<｜tool▁sep｜>f\n```json\n{...}\n```" (V3, R1) or "f<｜tool▁sep｜>{...}" (V3.1).
calls deepseek_body(std::string_view body, const tool_catalog*) {
  std::vector<tool_call> out;
  std::string_view s = trim(body);
  while (!s.empty()) {
    if (!consume(s, "<｜tool▁call▁begin｜>")) return std::nullopt;
    auto call = take_until(s, "<｜tool▁call▁end｜>");
    if (!call) return std::nullopt;
    std::string_view c = *call;
    auto left = take_until(c, "<｜tool▁sep｜>");
    if (!left) return std::nullopt;
    std::string_view name = trim(*left), args_text = c;
    if (name == "function") {
      const auto nl = c.find('\n');
      if (nl == npos) return std::nullopt;
      name = trim(c.substr(0, nl));
      args_text = trim(c.substr(nl + 1));
      if (!consume(args_text, "```json") || args_text.size() < 3 || args_text.substr(args_text.size() - 3) != "```")
        return std::nullopt;
      args_text.remove_suffix(3);
    }
    auto args = json_args(args_text);
    if (!plain_name(name) || !args) return std::nullopt;
    out.push_back(make_call(std::string(name), *args));
    s = trim(s);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// (<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{...}<|tool_call_end|>)*
calls kimi_body(std::string_view body, const tool_catalog*) {
  std::vector<tool_call> out;
  std::string_view s = trim(body);
  while (!s.empty()) {
    if (!consume(s, "<|tool_call_begin|>")) return std::nullopt;
    auto id = take_until(s, "<|tool_call_argument_begin|>");
    auto args_text = take_until(s, "<|tool_call_end|>");
    if (!id || !args_text) return std::nullopt;
    const std::string_view full_id = trim(*id);
    std::string_view name = full_id;
    consume(name, "functions.");
    name = name.substr(0, name.rfind(':'));
    auto args = json_args(*args_text);
    if (!plain_name(name) || !args) return std::nullopt;
    out.push_back(make_call(std::string(name), *args, std::string(full_id)));
    s = trim(s);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// A JSON list of call objects (or one object); "id" is the model's own when present.
bool json_call_list(std::string_view text, std::vector<tool_call>& out, bool mistral_ids) {
  json j = parse_json_or_discarded(trim(text));
  if (j.is_object()) j = json::array({std::move(j)});
  if (!j.is_array() || j.empty()) return false;
  for (const auto& item : j) {
    tool_call c;
    if (!json_call(item, c)) return false;
    auto id = item.find("id");
    if (id != item.end() && id->is_string() && !id->get<std::string>().empty()) c.id = id->get<std::string>();
    else if (mistral_ids) c.id = new_mistral_call_id();
    out.push_back(std::move(c));
  }
  return true;
}

// One Mistral piece after [TOOL_CALLS]: [{...}] (v3), or (f[ARGS]{...} | f[CALL_ID]id[ARGS]{...})+.
bool mistral_piece(std::string_view s, std::vector<tool_call>& out) {
  s = trim(s);
  if (s.substr(0, 1) == "[") return json_call_list(s, out, true);
  while (!s.empty()) {
    auto head = take_until(s, "[ARGS]");
    if (!head) return false;
    std::string_view name = *head, id;
    if (auto at = name.find("[CALL_ID]"); at != npos) {
      id = trim(name.substr(at + 9));
      name = name.substr(0, at);
    }
    name = trim(name);
    const std::size_t n = json_extent(s);
    if (n == npos || !plain_name(name)) return false;
    auto args = json_args(s.substr(0, n));
    if (!args) return false;
    out.push_back(make_call(std::string(name), *args, id.empty() ? new_mistral_call_id() : std::string(id)));
    s = trim(s.substr(n));
  }
  return true;
}

calls mistral_body(std::string_view body, const tool_catalog*) {
  std::vector<tool_call> out;
  for (;;) {
    const auto at = body.find("[TOOL_CALLS]");
    if (!mistral_piece(body.substr(0, at), out)) return std::nullopt;
    if (at == npos) break;
    body.remove_prefix(at + 12);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

calls granite_body(std::string_view body, const tool_catalog*) {
  std::vector<tool_call> out;
  if (!json_call_list(body, out, false)) return std::nullopt;
  return out;
}

// Gemma 4's argument syntax as JSON: <|"|>...<|"|> strings, bare keys.
std::optional<std::string> gemma_to_json(std::string_view s) {
  constexpr std::string_view quote = "<|\"|>";
  std::string out;
  while (!s.empty()) {
    if (consume(s, quote)) {
      auto str = take_until(s, quote);
      if (!str) return std::nullopt;
      out += dump_json(json(std::string(*str)));
      continue;
    }
    const char c = s.front();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t n = 0;
      while (n < s.size() && (std::isalnum(static_cast<unsigned char>(s[n])) || s[n] == '_' || s[n] == '-' || s[n] == '.')) ++n;
      const std::string_view word = s.substr(0, n);
      s.remove_prefix(n);
      const bool key = trim(s).substr(0, 1) == ":";
      if (key) out += dump_json(json(std::string(word)));
      else if (word == "true" || word == "false" || word == "null") out += word;
      else return std::nullopt;
      continue;
    }
    out += c;
    s.remove_prefix(1);
  }
  return out;
}

// call:f{...}
calls gemma4_body(std::string_view body, const tool_catalog*) {
  std::string_view s = trim(body);
  if (!consume(s, "call:")) return std::nullopt;
  const auto brace = s.find('{');
  if (brace == npos) return std::nullopt;
  const std::string_view name = trim(s.substr(0, brace));
  auto text = gemma_to_json(s.substr(brace));
  if (!text || !plain_name(name)) return std::nullopt;
  auto args = json_args(*text);
  if (!args) return std::nullopt;
  return std::vector<tool_call>{make_call(std::string(name), *args)};
}

// (<invoke name="f"> (<parameter name="p">v</parameter>)* </invoke>)+, values typed as Qwen3 XML's.
calls minimax_body(std::string_view body, const tool_catalog* tools) {
  std::vector<tool_call> out;
  std::string_view s = trim(body);
  while (!s.empty()) {
    if (!consume(s, "<invoke name=\"")) return std::nullopt;
    auto name = take_until(s, "\">");
    auto inner = take_until(s, "</invoke>");
    if (!name || !inner || !plain_name(*name)) return std::nullopt;
    json args = json::object();
    std::string_view p = trim(*inner);
    while (!p.empty()) {
      if (!consume(p, "<parameter name=\"")) return std::nullopt;
      auto key = take_until(p, "\">");
      auto value = take_until(p, "</parameter>");
      if (!key || !value || key->empty()) return std::nullopt;
      const json* schema = tools ? tools->parameter_schema(*name, *key) : nullptr;
      args[std::string(*key)] = typed_value(*value, schema);
      p = trim(p);
    }
    out.push_back(make_call(std::string(*name), args));
    s = trim(s);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// f>{...} (the start tag "<function=" consumed).
calls functionary_v3_1_body(std::string_view body, const tool_catalog*) {
  std::string_view s = body;
  auto name = take_until(s, ">");
  if (!name || !plain_name(*name)) return std::nullopt;
  auto args = json_args(s);
  if (!args) return std::nullopt;
  return std::vector<tool_call>{make_call(std::string(*name), *args)};
}

// [f(a=1), g()] between LFM2's markers: the pythonic reader's call list.
calls lfm2_body(std::string_view body, const tool_catalog*) { return parse_pythonic_reply(body); }

struct format_row {
  tool_call_format format;
  block_syntax syntax;
};
constexpr std::array<format_row, 12> k_blocks{{
    {tool_call_format::hermes, {"<tool_call>", "</tool_call>", hermes_body}},
    {tool_call_format::qwen3_xml, {"<tool_call>", "</tool_call>", qwen3_xml_body}},
    {tool_call_format::glm, {"<tool_call>", "</tool_call>", glm_body}},
    {tool_call_format::deepseek, {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", deepseek_body}},
    {tool_call_format::kimi, {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", kimi_body}},
    {tool_call_format::mistral, {"[TOOL_CALLS]", "", mistral_body}},
    {tool_call_format::granite, {"<|tool_call|>", "", granite_body}},
    {tool_call_format::gemma4, {"<|tool_call>", "<tool_call|>", gemma4_body}},
    {tool_call_format::minimax, {"<minimax:tool_call>", "</minimax:tool_call>", minimax_body}},
    {tool_call_format::functionary_v3_1, {"<function=", "</function>", functionary_v3_1_body}},
    {tool_call_format::seed_oss, {"<seed:tool_call>", "</seed:tool_call>", qwen3_xml_body}},
    {tool_call_format::lfm2, {"<|tool_call_start|>", "<|tool_call_end|>", lfm2_body}},
}};

}  // namespace

const block_syntax* block_syntax_of(tool_call_format f) {
  for (const auto& r : k_blocks)
    if (r.format == f) return &r.syntax;
  return nullptr;
}

std::string new_call_id() { return "chatcmpl-tool-" + random_uuid_hex(); }
std::string new_mistral_call_id() { return random_uuid_hex().substr(0, 9); }

namespace {

// The JSON types a parameter schema allows: its "type" (a name or a list of names) and those
// of its anyOf/oneOf branches; empty when it names none.
std::vector<std::string> schema_types(const json* schema) {
  std::vector<std::string> out;
  auto add = [&](const json& s) {
    if (!s.is_object()) return;
    auto t = s.find("type");
    if (t == s.end()) return;
    if (t->is_string()) out.push_back(t->get<std::string>());
    if (t->is_array())
      for (const auto& e : *t)
        if (e.is_string()) out.push_back(e.get<std::string>());
  };
  if (!schema) return out;
  add(*schema);
  for (const char* k : {"anyOf", "oneOf"}) {
    auto b = schema->is_object() ? schema->find(k) : schema->end();
    if (b != schema->end() && b->is_array())
      for (const auto& e : *b) add(e);
  }
  return out;
}

bool allows(const std::vector<std::string>& types, std::string_view t) {
  return std::find(types.begin(), types.end(), t) != types.end();
}

// Whether a parsed value's JSON type is one the schema allows (an integer is a number too).
bool allowed_value(const std::vector<std::string>& types, const json& v) {
  if (v.is_null()) return allows(types, "null");
  if (v.is_boolean()) return allows(types, "boolean");
  if (v.is_number_integer()) return allows(types, "integer") || allows(types, "number");
  if (v.is_number()) return allows(types, "number");
  if (v.is_array()) return allows(types, "array");
  return allows(types, "object");
}

}  // namespace

json typed_value(std::string_view text, const json* schema) {
  const std::vector<std::string> types = schema_types(schema);
  if (types.size() == 1 && types[0] == "string") return std::string(text);
  const std::string_view v = trim(text);
  json j;
  if (v == "True") j = true;
  else if (v == "False") j = false;
  else if (v == "None") j = nullptr;
  else j = parse_json_or_discarded(v);
  if (j.is_discarded()) return std::string(text);
  // A value of a type the schema does not allow stays text where the schema allows a
  // string ("123" for a string-or-null parameter is the string "123").
  if (!j.is_string() && !types.empty() && !allowed_value(types, j) && allows(types, "string"))
    return std::string(text);
  return j;
}

bool json_call(const json& j, tool_call& out) {
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
  out.id = new_call_id();
  out.name = std::move(fn);
  out.arguments = dump_json(a);
  return true;
}

calls parse_recipient_message(std::string_view name, std::string_view body) {
  if (!plain_name(name)) return std::nullopt;
  auto args = json_args(body);
  if (!args && name == "python") args = json{{"code", std::string(body)}};
  if (!args) return std::nullopt;
  return std::vector<tool_call>{make_call(std::string(name), *args)};
}

// One object, objects separated by ";", or a list of them.
calls parse_llama3_reply(std::string_view text) {
  std::vector<tool_call> out;
  const json whole = parse_json_or_discarded(text);
  if (whole.is_array()) {
    for (const auto& item : whole) {
      tool_call c;
      if (!json_call(item, c)) return std::nullopt;
      out.push_back(std::move(c));
    }
  } else {
    // Split at ";"; a piece that does not parse is extended to the next ";" (the ";" was
    // inside a string).
    std::size_t from = 0, end = text.find(';');
    for (;;) {
      const std::string_view piece = text.substr(from, end == npos ? npos : end - from);
      tool_call c;
      if (json_call(parse_json_or_discarded(piece), c)) {
        out.push_back(std::move(c));
        if (end == npos) break;
        from = end + 1;
        end = text.find(';', from);
      } else if (end != npos) {
        end = text.find(';', end + 1);
      } else if (!out.empty() && trim(piece).empty()) {
        break;  // a trailing ";"
      } else {
        return std::nullopt;
      }
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace vks::api::syntax
