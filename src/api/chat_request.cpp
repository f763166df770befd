// Chat completions request parsing (chat_request.hpp).
#include "api/chat_request.hpp"

#include <array>
#include <limits>

#include "api/json_parse.hpp"
#include "api/structural_tag.hpp"

namespace vks::api {

namespace {

constexpr std::array k_roles{"system", "developer", "user", "assistant", "tool", "function"};
constexpr std::array k_text_parts{"text", "input_text", "refusal", "output_text"};

bool one_of(std::string_view s, const auto& set) {
  for (std::string_view x : set)
    if (s == x) return true;
  return false;
}

// Content parts -> one string. Returns false (and records the error) on a bad part.
bool join_parts(fields& f, const json& parts, const std::string& where, std::string& out) {
  bool first = true;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const json& part = parts[k];
    const std::string pname = where + "[" + std::to_string(k) + "]";
    if (part.is_string()) {  // tolerated: a bare string part
      out += first ? "" : "\n";
      out += part.get<std::string>();
      first = false;
      continue;
    }
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      f.fail_error(make_error(errc::invalid_argument, pname + " must be an object with a string `type`.", pname));
      return false;
    }
    const std::string type = part["type"].get<std::string>();
    if (!one_of(type, k_text_parts)) {
      f.fail_error(make_error(errc::invalid_argument,
                              "Content part of type `" + type + "` is not supported: this model accepts text only.",
                              pname));
      return false;
    }
    const char* key = type == "refusal" ? "refusal" : "text";
    if (!part.contains(key) || !part[key].is_string()) {
      f.fail_error(make_error(errc::invalid_argument, pname + "." + key + " must be a string.", pname));
      return false;
    }
    out += first ? "" : "\n";
    out += part[key].get<std::string>();
    first = false;
  }
  return true;
}

void normalise_tool_calls(json& msg) {
  auto it = msg.find("tool_calls");
  if (it == msg.end() || !it->is_array()) return;
  for (auto& call : *it) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
    json& fn = call["function"];
    if (fn.contains("arguments") && fn["arguments"].is_string()) {
      json parsed = parse_json_or_discarded(fn["arguments"].get<std::string>());
      if (!parsed.is_discarded() && parsed.is_object()) fn["arguments"] = std::move(parsed);
    }
  }
}

json normalise_message(fields& f, const json& m, std::size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "]";
  auto bad = [&](const std::string& what, const std::string& param) {
    f.fail_error(make_error(errc::invalid_argument, what, param));
    return json();
  };
  if (!m.is_object()) return bad(where + " must be an object.", where);
  if (!m.contains("role") || !m["role"].is_string()) return bad(where + ".role must be a string.", where + ".role");
  const std::string role = m["role"].get<std::string>();
  if (!one_of(role, k_roles))
    return bad(where + ".role `" + role + "` is not one of system, developer, user, assistant, tool.", where + ".role");
  json out = m;
  auto c = m.find("content");
  if (c == m.end() || c->is_null()) {
    if (role != "assistant") return bad(where + ".content is required for role `" + role + "`.", where + ".content");
    out["content"] = "";  // vLLM's string content format: null is "" (templates test `in message.content`)
  } else if (c->is_array()) {
    std::string text;
    if (!join_parts(f, *c, where + ".content", text)) return json();
    out["content"] = text;
  } else if (!c->is_string()) {
    return bad(where + ".content must be a string or a list of content parts.", where + ".content");
  }
  if (m.contains("tool_calls") && !m["tool_calls"].is_null() && !m["tool_calls"].is_array())
    return bad(where + ".tool_calls must be a list.", where + ".tool_calls");
  if (role == "tool" && m.contains("tool_call_id") && !m["tool_call_id"].is_string())
    return bad(where + ".tool_call_id must be a string.", where + ".tool_call_id");
  normalise_tool_calls(out);
  for (const char* key : {"reasoning_content", "reasoning"}) {
    auto r = m.find(key);
    if (r != m.end() && r->is_string()) {
      out["reasoning_content"] = *r;
      out["reasoning"] = *r;
      if (!m.contains("thinking")) out["thinking"] = *r;  // gpt-oss's template reads `thinking`
      break;
    }
  }
  return out;
}

void read_messages(fields& f, chat_request& r) {
  const json* v = f.get("messages");
  if (!v) return f.fail("messages", "messages is required.");
  if (!v->is_array() || v->empty()) return f.fail("messages", "messages must be a non-empty list.");
  r.messages = json::array();
  for (std::size_t i = 0; i < v->size() && f.ok(); ++i) r.messages.push_back(normalise_message(f, (*v)[i], i));
}

void read_tools(fields& f, chat_request& r) {
  if (const json* t = f.get("tools")) {
    if (!t->is_array()) return f.fail("tools", "tools must be a list.");
    if (t->empty()) return f.fail("tools", "tools must not be an empty list; omit it instead.");
    for (const auto& tool : *t) {
      if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object() ||
          !tool["function"].contains("name") || !tool["function"]["name"].is_string())
        return f.fail("tools", "each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}.");
    }
    r.tools = *t;
  }
  r.tool_choice = r.tools.is_null() ? tool_choice_mode::none : tool_choice_mode::automatic;
  const json* c = f.get("tool_choice");
  if (!c) return;
  if (c->is_string()) {
    const std::string s = c->get<std::string>();
    if (s == "none") r.tool_choice = tool_choice_mode::none;
    else if (s == "auto") r.tool_choice = tool_choice_mode::automatic;
    else if (s == "required") r.tool_choice = tool_choice_mode::required;
    else return f.fail("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or a named function.");
  } else if (c->is_object() && c->contains("function") && (*c)["function"].is_object() &&
             (*c)["function"].contains("name") && (*c)["function"]["name"].is_string()) {
    r.tool_choice = tool_choice_mode::named;
    r.tool_choice_name = (*c)["function"]["name"].get<std::string>();
  } else {
    return f.fail("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or a named function.");
  }
  if (r.tool_choice != tool_choice_mode::none && r.tools.is_null())
    return f.fail("tool_choice", "tool_choice requires tools.");
  check_named_tool(f, r, "tool_choice");
}

}  // namespace

void check_named_tool(fields& f, const chat_request& r, const char* param) {
  if (r.tool_choice != tool_choice_mode::named) return;
  for (const auto& tool : r.tools)
    if (tool["function"]["name"] == r.tool_choice_name) return;
  f.fail(param, "Tool `" + r.tool_choice_name + "` named in tool_choice is not in tools.");
}

void read_stream(fields& f, stream_settings& s) {
  f.boolean("stream", s.stream);
  std::optional<json> so;
  f.object("stream_options", so);
  if (!so || !f.ok()) return;
  if (!s.stream) return f.fail("stream_options", "stream_options can only be set when stream is true.");
  fields g(*so, "stream_options.");
  g.boolean("include_usage", s.include_usage);
  g.boolean("continuous_usage_stats", s.continuous_usage_stats);
  if (!g.ok()) f.fail_error(g.error());
}

namespace {

// The constraint keys of one request object (response_format, structured_outputs, the
// legacy guided_* keys): each one found sets `out`; two or more are refused at the end.
// Params are named through f (so "parameters.response_format" in the LMI schema).
class structured_reader {
 public:
  using kind = structured_output::kind;
  structured_reader(fields& f, std::optional<structured_output>& out) : f_(f), out_(out) {}

  void response_format(const json& rf) {
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
      return f_.fail("response_format", "response_format must be an object with a `type`.");
    const std::string type = rf["type"].get<std::string>();
    if (type == "json_object") {
      set(kind::json_object, json::object());
    } else if (type == "json_schema") {
      auto js = rf.find("json_schema");
      if (js == rf.end() || !js->is_object())
        return f_.fail("response_format", "response_format of type json_schema requires `json_schema`.");
      auto schema = js->find("schema");
      set(kind::json_schema, schema != js->end() ? *schema : json::object());
    } else if (type == "structural_tag") {
      structural_tag(rf, "response_format");
    } else if (type != "text") {
      return f_.fail("response_format",
                     "response_format.type must be text, json_object, json_schema or structural_tag.");
    }
  }

  // The value of one constraint key (name relative to f), checked for its kind's type.
  void take(const std::string& name, kind k, const json& v) {
    if ((k == kind::regex || k == kind::grammar) && !v.is_string()) return f_.fail(name, name + " must be a string.");
    if (k == kind::choice) {
      if (!v.is_array() || v.empty()) return f_.fail(name, name + " must be a non-empty list of strings.");
      for (const auto& c : v)
        if (!c.is_string()) return f_.fail(name, name + " must be a non-empty list of strings.");
    }
    json val = v;
    if (k == kind::json_schema && v.is_string()) {
      auto r = parse_json(v.get<std::string>());
      if (!r) return f_.fail(name, json_string_error(name, r.error()));
      val = std::move(*r);
    }
    if (k == kind::json_schema && !val.is_object() && !val.is_boolean())
      return f_.fail(name, name + " must be a JSON schema object.");
    set(k, std::move(val));
  }

  void structural_tag(const json& v, const std::string& name) {
    auto tag = parse_structural_tag(v, f_.name(name));
    if (!tag) return f_.fail_error(std::move(tag).error());
    set(kind::structural_tag, json());
    out_->tag = std::move(*tag);
  }

  // structured_outputs {json | regex | choice | grammar | json_object | structural_tag,
  // and the JSON options}.
  void structured_outputs(const json& so, structured_output& options) {
    if (!so.is_object()) return f_.fail("structured_outputs", "structured_outputs must be an object.");
    fields g(so, f_.name("structured_outputs") + ".");
    const std::pair<const char*, kind> keys[] = {{"json", kind::json_schema}, {"regex", kind::regex},
                                                 {"choice", kind::choice},    {"grammar", kind::grammar},
                                                 {"json_object", kind::json_object}};
    for (const auto& [key, k] : keys)
      if (const json* v = g.get(key)) {
        if (k != kind::json_object) take(std::string("structured_outputs.") + key, k, *v);
        else if (!v->is_boolean() || v->get<bool>()) set(k, json::object());
      }
    if (const json* v = g.get("structural_tag")) structural_tag(*v, "structured_outputs.structural_tag");
    bool disable_ws = false, disable_additional = false;
    g.boolean("disable_any_whitespace", disable_ws);
    g.boolean("disable_additional_properties", disable_additional);
    options.any_whitespace = !disable_ws;
    options.additional_properties = !disable_additional && so.contains("disable_additional_properties");
    g.string("whitespace_pattern", options.whitespace_pattern);
    if (!g.ok()) f_.fail_error(g.error());
  }

  int n_kinds() const noexcept { return n_kinds_; }

 private:
  void set(kind k, json value) {
    ++n_kinds_;
    out_ = structured_output{k, std::move(value)};
  }

  fields& f_;
  std::optional<structured_output>& out_;
  int n_kinds_ = 0;
};

}  // namespace

void read_structured_output(fields& f, std::optional<structured_output>& out) {
  structured_reader r(f, out);
  if (const json* rf = f.get("response_format")) r.response_format(*rf);
  const std::pair<const char*, structured_output::kind> legacy[] = {
      {"guided_json", structured_output::kind::json_schema},
      {"guided_regex", structured_output::kind::regex},
      {"guided_choice", structured_output::kind::choice},
      {"guided_grammar", structured_output::kind::grammar}};
  for (const auto& [key, kind] : legacy)
    if (const json* v = f.get(key)) r.take(key, kind, *v);
  structured_output options;  // JSON options only
  if (const json* v = f.get("guided_whitespace_pattern"); v && v->is_string())
    options.whitespace_pattern = v->get<std::string>();
  if (const json* so = f.get("structured_outputs")) r.structured_outputs(*so, options);
  if (f.ok() && r.n_kinds() > 1)
    f.fail("structured_outputs",
           "Only one kind of structured output (json, regex, choice, grammar, json_object, structural_tag) may be given.");
  if (out) {
    out->any_whitespace = options.any_whitespace;
    out->additional_properties = options.additional_properties;
    out->whitespace_pattern = std::move(options.whitespace_pattern);
  }
}

result<chat_request> parse_chat_request(const json& body, const parse_limits& lim) {
  if (!body.is_object()) return fail(errc::invalid_argument, "The request body must be a JSON object.");
  chat_request r;
  fields f(body);
  f.string("model", r.model);
  read_messages(f, r);
  read_sampling(f, r.sampling, lim);
  check_sequence_count(f, 1, r.sampling.n, lim, "n");
  read_cache_salt(f, r.cache_salt);
  std::optional<std::int64_t> max_tokens, max_completion;
  f.integer("max_tokens", max_tokens, 1, std::numeric_limits<std::int32_t>::max());
  f.integer("max_completion_tokens", max_completion, 1, std::numeric_limits<std::int32_t>::max());
  if (max_completion) r.sampling.max_tokens = static_cast<int>(*max_completion);
  else if (max_tokens) r.sampling.max_tokens = static_cast<int>(*max_tokens);
  read_stream(f, r.stream);
  f.boolean("logprobs", r.logprobs);
  f.integer("top_logprobs", r.top_logprobs, 0, lim.max_logprobs);
  if (f.ok() && f.has("top_logprobs") && !r.logprobs)
    f.fail("top_logprobs", "top_logprobs requires logprobs to be true.");
  if (r.logprobs) r.sampling.logprobs = r.top_logprobs;
  if (f.ok() && r.sampling.prompt_logprobs >= 0 && r.stream.stream)
    f.fail("prompt_logprobs", "prompt_logprobs is not supported with stream=true.");
  f.boolean("echo", r.echo);
  f.boolean("add_generation_prompt", r.add_generation_prompt);
  f.boolean("continue_final_message", r.continue_final_message);
  // Only an explicit add_generation_prompt:true conflicts (vLLM checks the raw body); with
  // continue_final_message alone the default (true) gives way.
  if (f.ok() && r.continue_final_message) {
    if (f.has("add_generation_prompt") && r.add_generation_prompt)
      f.fail("continue_final_message", "continue_final_message and add_generation_prompt cannot both be true.");
    r.add_generation_prompt = false;
  }
  f.boolean("add_special_tokens", r.add_special_tokens);
  f.string("chat_template", r.chat_template);
  std::optional<json> kwargs;
  f.object("chat_template_kwargs", kwargs);
  // Each member becomes a template variable (found by a scan, set by a scan): a count that
  // means nothing would make rendering quadratic.
  constexpr std::size_t max_template_kwargs = 256;
  if (kwargs && kwargs->size() > max_template_kwargs)
    f.fail("chat_template_kwargs", "chat_template_kwargs has more than 256 members.");
  if (kwargs) r.chat_template_kwargs = std::move(*kwargs);
  read_tools(f, r);
  f.boolean("parallel_tool_calls", r.parallel_tool_calls);
  read_structured_output(f, r.structured);
  if (f.ok() && r.structured && r.tool_choice == tool_choice_mode::named)
    f.fail("tool_choice", "A named tool_choice cannot be combined with structured output.");
  if (f.ok() && r.structured && r.tool_choice == tool_choice_mode::required)
    f.fail("tool_choice", "tool_choice \"required\" cannot be combined with structured output.");
  f.boolean("include_reasoning", r.include_reasoning);
  f.string("reasoning_effort", r.reasoning_effort);
  if (f.ok() && r.reasoning_effort) {
    static constexpr std::array efforts{"none", "minimal", "low", "medium", "high", "xhigh", "max"};
    if (!one_of(*r.reasoning_effort, efforts))
      f.fail("reasoning_effort", "reasoning_effort must be one of none, minimal, low, medium, high, xhigh, max.");
    else if (!r.chat_template_kwargs.contains("reasoning_effort"))
      r.chat_template_kwargs["reasoning_effort"] = *r.reasoning_effort;
    if (*r.reasoning_effort == "none" && !r.chat_template_kwargs.contains("enable_thinking"))
      r.chat_template_kwargs["enable_thinking"] = false;
  }
  f.string("request_id", r.request_id);
  read_truncate_prompt_tokens(f, "truncate_prompt_tokens", r.truncate_prompt_tokens, lim);
  f.boolean("return_token_ids", r.return_token_ids);
  if (f.ok()) check_sampling(f, r.sampling);
  if (!f.ok()) return fail(f.error());
  return r;
}

}  // namespace vks::api
