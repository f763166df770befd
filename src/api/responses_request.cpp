// OpenAI Responses request parsing (responses_request.hpp).
#include "api/responses_request.hpp"

#include <array>
#include <limits>

#include "api/json_parse.hpp"

namespace vks::api {
namespace {

const json* string_member(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? &*it : nullptr;
}

bool bad(fields& f, const std::string& param, const std::string& message) {
  f.fail_error(make_error(errc::invalid_argument, message, param));
  return false;
}

// Message content: a string or text parts joined with "\n".
bool content_text(fields& f, const json& c, const std::string& where, std::string& out) {
  if (c.is_string()) {
    out = c.get<std::string>();
    return true;
  }
  if (!c.is_array()) return bad(f, where, where + " must be a string or a list of content parts.");
  for (std::size_t k = 0; k < c.size(); ++k) {
    const std::string pw = where + "[" + std::to_string(k) + "]";
    const json* type = c[k].is_object() ? string_member(c[k], "type") : nullptr;
    if (!type) return bad(f, pw, pw + " must be an object with a string `type`.");
    const std::string& t = type->get_ref<const std::string&>();
    if (t != "input_text" && t != "output_text" && t != "text" && t != "refusal")
      return bad(f, pw, "Content part of type `" + t + "` is not supported: this model accepts text only.");
    const json* text = string_member(c[k], t == "refusal" ? "refusal" : "text");
    if (!text) return bad(f, pw + ".text", pw + ".text must be a string.");
    if (!out.empty()) out += '\n';
    out += text->get_ref<const std::string&>();
  }
  return true;
}

class input_reader {
 public:
  input_reader(fields& f, json& out) : f_(f), out_(out) {}

  bool item(const json& it, std::size_t i) {
    const std::string where = "input[" + std::to_string(i) + "]";
    if (!it.is_object()) return bad(f_, where, where + " must be an object.");
    const json* type = string_member(it, "type");
    const std::string t = type ? type->get<std::string>() : "message";
    if (t == "message") return message(it, where);
    if (t == "function_call") return function_call(it, where);
    if (t == "function_call_output" || t == "custom_tool_call_output") return call_output(it, where);
    if (t == "custom_tool_call") return custom_call(it, where);
    if (t == "reasoning") return reasoning(it);
    return bad(f_, where + ".type", where + ": input items of type `" + t + "` are not supported.");
  }

 private:
  bool message(const json& it, const std::string& where) {
    const json* role = string_member(it, "role");
    static constexpr std::array roles{"user", "assistant", "system", "developer"};
    bool known = false;
    for (std::string_view r : roles) known = known || (role && *role == r);
    if (!known) return bad(f_, where + ".role", where + ".role must be user, assistant, system or developer.");
    auto c = it.find("content");
    if (c == it.end()) return bad(f_, where + ".content", where + ".content is required.");
    std::string text;
    if (!content_text(f_, *c, where + ".content", text)) return false;
    json m;
    m["role"] = *role;
    m["content"] = std::move(text);
    if (*role == "assistant") take_reasoning(m);
    out_.push_back(std::move(m));
    return true;
  }

  bool function_call(const json& it, const std::string& where) {
    const json* call_id = string_member(it, "call_id");
    const json* name = string_member(it, "name");
    const json* args = string_member(it, "arguments");
    if (!call_id || !name || !args)
      return bad(f_, where, where + ": a function_call needs string `call_id`, `name` and `arguments`.");
    json parsed = parse_json_or_discarded(args->get_ref<const std::string&>());
    return add_call(*call_id, *name, parsed.is_object() ? parsed : *args);
  }

  // A custom (freeform) tool's call from another server's history: its input as the
  // arguments {"input": ...} (this server offers no custom tools, see read_tools).
  bool custom_call(const json& it, const std::string& where) {
    const json* call_id = string_member(it, "call_id");
    const json* name = string_member(it, "name");
    const json* input = string_member(it, "input");
    if (!call_id || !name || !input)
      return bad(f_, where, where + ": a custom_tool_call needs string `call_id`, `name` and `input`.");
    return add_call(*call_id, *name, json{{"input", *input}});
  }

  bool add_call(const json& call_id, const json& name, json arguments) {
    json call;
    call["id"] = call_id;
    call["type"] = "function";
    call["function"]["name"] = name;
    call["function"]["arguments"] = std::move(arguments);
    // Consecutive calls (and a call right after the assistant's text) are one message.
    if (out_.empty() || out_.back()["role"] != "assistant" || !pending_reasoning_.empty()) {
      json m;
      m["role"] = "assistant";
      m["content"] = "";
      take_reasoning(m);
      out_.push_back(std::move(m));
    }
    json& m = out_.back();
    if (!m.contains("tool_calls")) m["tool_calls"] = json::array();
    m["tool_calls"].push_back(std::move(call));
    return true;
  }

  bool call_output(const json& it, const std::string& where) {
    const json* call_id = string_member(it, "call_id");
    if (!call_id) return bad(f_, where + ".call_id", where + ".call_id must be a string.");
    auto o = it.find("output");
    std::string text;
    if (o == it.end() || !content_text(f_, *o, where + ".output", text)) {
      return o == it.end() ? bad(f_, where + ".output", where + ".output is required.") : false;
    }
    json m;
    m["role"] = "tool";
    m["content"] = std::move(text);
    m["tool_call_id"] = *call_id;
    out_.push_back(std::move(m));
    return true;
  }

  // reasoning_text content, else the summary: kept for the next assistant message.
  bool reasoning(const json& it) {
    std::string text;
    for (const char* key : {"content", "summary"}) {
      auto c = it.find(key);
      if (c == it.end() || !c->is_array()) continue;
      for (const auto& part : *c)
        if (const json* t = part.is_object() ? string_member(part, "text") : nullptr) text += t->get<std::string>();
      if (!text.empty()) break;
    }
    pending_reasoning_ += text;
    return true;
  }

  void take_reasoning(json& m) {
    if (pending_reasoning_.empty()) return;
    m["reasoning_content"] = pending_reasoning_;
    m["reasoning"] = pending_reasoning_;
    pending_reasoning_.clear();
  }

  fields& f_;
  json& out_;
  std::string pending_reasoning_;
};

void read_input(fields& f, responses_request& r) {
  const json* v = f.get("input");
  if (!v) return f.fail("input", "input is required.");
  if (v->is_string()) {
    r.input_messages.push_back({{"role", "user"}, {"content", v->get<std::string>()}});
    return;
  }
  if (!v->is_array() || v->empty()) return f.fail("input", "input must be a string or a non-empty list of items.");
  input_reader reader(f, r.input_messages);
  for (std::size_t i = 0; i < v->size() && f.ok(); ++i) reader.item((*v)[i], i);
}

void read_tools(fields& f, responses_request& r) {
  chat_request& c = r.chat;
  json echo = json::array();
  if (const json* t = f.get("tools")) {
    if (!t->is_array()) return f.fail("tools", "tools must be a list.");
    json tools = json::array();
    for (std::size_t k = 0; k < t->size(); ++k) {
      const json& tool = (*t)[k];
      const std::string where = "tools[" + std::to_string(k) + "]";
      const json* type = tool.is_object() ? string_member(tool, "type") : nullptr;
      if (!type) return f.fail(where, where + " must be an object with a string `type`.");
      if (*type != "function") {
        r.ignored_tools.push_back(type->get<std::string>());
        continue;
      }
      const json* name = string_member(tool, "name");
      if (!name) return f.fail(where + ".name", where + ".name must be a string.");
      json fn;
      fn["name"] = *name;
      if (const json* d = string_member(tool, "description")) fn["description"] = *d;
      auto params = tool.find("parameters");
      fn["parameters"] = params != tool.end() && params->is_object() ? *params : json::object();
      tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
      echo.push_back(tool);
    }
    if (!tools.empty()) c.tools = std::move(tools);
  }
  r.echo["tools"] = std::move(echo);
  c.tool_choice = c.tools.is_null() ? tool_choice_mode::none : tool_choice_mode::automatic;
  r.echo["tool_choice"] = "auto";
  const json* tc = f.get("tool_choice");
  if (!tc) return;
  r.echo["tool_choice"] = *tc;
  const std::string s = tc->is_string() ? tc->get<std::string>() : std::string();
  if (s == "none") c.tool_choice = tool_choice_mode::none;
  else if (s == "auto") c.tool_choice = c.tools.is_null() ? tool_choice_mode::none : tool_choice_mode::automatic;
  else if (s == "required") c.tool_choice = tool_choice_mode::required;
  else if (tc->is_object() && string_member(*tc, "type") && (*tc)["type"] == "function" && string_member(*tc, "name")) {
    c.tool_choice = tool_choice_mode::named;
    c.tool_choice_name = (*tc)["name"].get<std::string>();
  } else if (tc->is_object() && string_member(*tc, "type") && (*tc)["type"] != "function") {
    c.tool_choice = c.tools.is_null() ? tool_choice_mode::none : tool_choice_mode::automatic;  // a hosted tool
  } else {
    return f.fail("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}.");
  }
  if (c.tool_choice != tool_choice_mode::none && c.tool_choice != tool_choice_mode::automatic && c.tools.is_null())
    return f.fail("tool_choice", "tool_choice requires function tools.");
  check_named_tool(f, c, "tool_choice");
}

void read_text_format(fields& f, responses_request& r) {
  r.echo["text"] = {{"format", {{"type", "text"}}}};
  const json* t = f.get("text");
  if (!t) return;
  if (!t->is_object()) return f.fail("text", "text must be an object.");
  auto fmt = t->find("format");
  if (fmt == t->end() || fmt->is_null()) return;
  const json* type = fmt->is_object() ? string_member(*fmt, "type") : nullptr;
  if (!type) return f.fail("text.format", "text.format must be an object with a `type`.");
  r.echo["text"] = *t;
  if (*type == "json_object") {
    r.chat.structured = structured_output{structured_output::kind::json_object, json::object()};
  } else if (*type == "json_schema") {
    auto schema = fmt->find("schema");
    if (schema == fmt->end() || (!schema->is_object() && !schema->is_boolean()))
      return f.fail("text.format.schema", "text.format of type json_schema requires a `schema` object.");
    r.chat.structured = structured_output{structured_output::kind::json_schema, *schema};
  } else if (*type != "text") {
    return f.fail("text.format.type", "text.format.type must be text, json_object or json_schema.");
  }
}

void read_reasoning(fields& f, responses_request& r) {
  r.echo["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
  const json* v = f.get("reasoning");
  if (!v) return;
  if (!v->is_object()) return f.fail("reasoning", "reasoning must be an object.");
  r.echo["reasoning"] = *v;
  const json* e = string_member(*v, "effort");
  if (!e) return;
  static constexpr std::array efforts{"none", "minimal", "low", "medium", "high", "xhigh"};
  bool known = false;
  for (std::string_view x : efforts) known = known || *e == x;
  if (!known) return f.fail("reasoning.effort", "reasoning.effort must be one of none, minimal, low, medium, high, xhigh.");
  r.chat.reasoning_effort = e->get<std::string>();
  r.chat.chat_template_kwargs["reasoning_effort"] = *e;
  if (*e == "none") r.chat.chat_template_kwargs["enable_thinking"] = false;
}

void read_settings(fields& f, responses_request& r, const parse_limits& lim) {
  chat_request& c = r.chat;
  f.string("instructions", r.instructions);
  f.string("previous_response_id", r.previous_response_id);
  f.boolean("store", r.store);
  std::optional<std::int64_t> max_out;
  f.integer("max_output_tokens", max_out, 1, std::numeric_limits<std::int32_t>::max());
  if (max_out) c.sampling.max_tokens = static_cast<int>(*max_out);
  std::optional<json> metadata;
  f.object("metadata", metadata);
  f.boolean("parallel_tool_calls", c.parallel_tool_calls);
  read_sampling(f, c.sampling, lim);
  if (f.ok() && c.sampling.n != 1) f.fail("n", "n must be 1 for /v1/responses.");
  f.boolean("stream", c.stream.stream);
  std::string user, truncation = "disabled";
  f.string("user", user);
  f.string("truncation", truncation);
  if (f.ok() && truncation != "disabled" && truncation != "auto")
    f.fail("truncation", "truncation must be \"auto\" or \"disabled\".");
  if (f.ok() && f.has("background") && f.get("background")->is_boolean() && f.get("background")->get<bool>())
    f.fail("background", "background responses are not supported by this server.");
  json& e = r.echo;
  e["instructions"] = r.instructions ? json(*r.instructions) : json(nullptr);
  e["max_output_tokens"] = max_out ? json(*max_out) : json(nullptr);
  e["metadata"] = metadata ? *metadata : json::object();
  e["parallel_tool_calls"] = c.parallel_tool_calls;
  e["previous_response_id"] = r.previous_response_id.empty() ? json(nullptr) : json(r.previous_response_id);
  e["store"] = r.store;
  e["temperature"] = f.has("temperature") ? *f.get("temperature") : json(1.0);
  e["top_p"] = f.has("top_p") ? *f.get("top_p") : json(1.0);
  e["truncation"] = truncation;
  e["user"] = user.empty() ? json(nullptr) : json(user);
}

// The echo in the response object's field order.
json ordered_echo(const json& e) {
  json out = json::object();
  for (const char* k : {"instructions", "max_output_tokens", "metadata", "parallel_tool_calls", "previous_response_id",
                        "reasoning", "store", "temperature", "text", "tool_choice", "tools", "top_p", "truncation", "user"})
    out[k] = e.contains(k) ? e[k] : json(nullptr);
  return out;
}

}  // namespace

result<responses_request> parse_responses_request(const json& body, const parse_limits& lim) {
  if (!body.is_object()) return fail(errc::invalid_argument, "The request body must be a JSON object.");
  responses_request r;
  fields f(body);
  f.string("model", r.chat.model);
  read_input(f, r);
  read_settings(f, r, lim);
  read_tools(f, r);
  read_text_format(f, r);
  read_reasoning(f, r);
  read_cache_salt(f, r.chat.cache_salt);
  if (f.ok() && r.chat.structured && r.chat.tool_choice == tool_choice_mode::named)
    f.fail("tool_choice", "A named tool_choice cannot be combined with text.format.");
  if (f.ok() && r.chat.structured && r.chat.tool_choice == tool_choice_mode::required)
    f.fail("tool_choice", "tool_choice \"required\" cannot be combined with text.format.");
  if (f.ok()) check_sampling(f, r.chat.sampling);
  if (!f.ok()) return fail(f.error());
  r.echo = ordered_echo(r.echo);
  return r;
}

json output_to_messages(const json& output) {
  json m;
  m["role"] = "assistant";
  std::string text, reasoning;
  json calls = json::array();
  for (const auto& item : output) {
    if (item["type"] == "message") {
      for (const auto& part : item["content"])
        if (part.contains("text")) text += part["text"].get<std::string>();
    } else if (item["type"] == "reasoning" && item.contains("content")) {
      for (const auto& part : item["content"]) reasoning += part["text"].get<std::string>();
    } else if (item["type"] == "function_call") {
      json args = parse_json_or_discarded(item["arguments"].get<std::string>());
      calls.push_back({{"id", item["call_id"]}, {"type", "function"},
                       {"function", {{"name", item["name"]}, {"arguments", args.is_object() ? args : item["arguments"]}}}});
    }
  }
  m["content"] = text;
  if (!calls.empty()) m["tool_calls"] = std::move(calls);
  if (!reasoning.empty()) {
    m["reasoning_content"] = reasoning;
    m["reasoning"] = reasoning;
  }
  return json::array({std::move(m)});
}

}  // namespace vks::api
