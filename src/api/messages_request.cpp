// Anthropic Messages request parsing (messages_request.hpp).
#include "api/messages_request.hpp"

#include <limits>

namespace vks::api {
namespace {

constexpr std::string_view k_attribution = "x-anthropic-billing-header:";

// One message's blocks sorted by what the chat message needs.
struct message_parts {
  std::string text;       // text blocks joined with "\n"
  std::string reasoning;  // thinking blocks joined
  json tool_calls = json::array();
  json tool_results = json::array();  // `tool` messages, in order
};

void join(std::string& out, std::string_view s) {
  if (!out.empty()) out += '\n';
  out += s;
}

bool bad(fields& f, const std::string& param, const std::string& message) {
  f.fail_error(make_error(errc::invalid_argument, message, param));
  return false;
}

const json* string_member(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? &*it : nullptr;
}

bool media_refused(fields& f, const std::string& where, const std::string& type) {
  return bad(f, where, "Content block of type `" + type + "` is not supported: this model accepts text only.");
}

// tool_result content: a string or text blocks.
bool tool_result_text(fields& f, const json& b, const std::string& where, std::string& out) {
  auto c = b.find("content");
  if (c == b.end() || c->is_null()) return true;
  if (c->is_string()) {
    out = c->get<std::string>();
    return true;
  }
  if (!c->is_array()) return bad(f, where + ".content", where + ".content must be a string or a list of blocks.");
  for (std::size_t k = 0; k < c->size(); ++k) {
    const json& part = (*c)[k];
    const std::string pw = where + ".content[" + std::to_string(k) + "]";
    const json* type = part.is_object() ? string_member(part, "type") : nullptr;
    if (!type) return bad(f, pw, pw + " must be an object with a string `type`.");
    if (*type != "text") return media_refused(f, pw, type->get<std::string>());
    const json* text = string_member(part, "text");
    if (!text) return bad(f, pw + ".text", pw + ".text must be a string.");
    join(out, text->get_ref<const std::string&>());
  }
  return true;
}

bool read_block(fields& f, const json& b, const std::string& where, bool assistant, message_parts& p) {
  const json* type = b.is_object() ? string_member(b, "type") : nullptr;
  if (!type) return bad(f, where, where + " must be an object with a string `type`.");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") {
    const json* text = string_member(b, "text");
    if (!text) return bad(f, where + ".text", where + ".text must be a string.");
    join(p.text, text->get_ref<const std::string&>());
  } else if (t == "thinking") {
    const json* th = string_member(b, "thinking");
    if (!th) return bad(f, where + ".thinking", where + ".thinking must be a string.");
    p.reasoning += th->get_ref<const std::string&>();
  } else if (t == "redacted_thinking") {
    // Opaque (encrypted by another server): nothing a template can show.
  } else if (t == "tool_use" || t == "server_tool_use") {
    if (!assistant) return bad(f, where, where + ": tool_use blocks belong to assistant messages.");
    const json* id = string_member(b, "id");
    const json* name = string_member(b, "name");
    if (!id || !name) return bad(f, where, where + " needs a string `id` and `name`.");
    auto input = b.find("input");
    json call;
    call["id"] = *id;
    call["type"] = "function";
    call["function"]["name"] = *name;
    call["function"]["arguments"] = input != b.end() && input->is_object() ? *input : json::object();
    p.tool_calls.push_back(std::move(call));
  } else if (t == "tool_result") {
    if (assistant) return bad(f, where, where + ": tool_result blocks belong to user messages.");
    const json* id = string_member(b, "tool_use_id");
    if (!id) return bad(f, where + ".tool_use_id", where + ".tool_use_id must be a string.");
    json msg;
    msg["role"] = "tool";
    std::string text;
    if (!tool_result_text(f, b, where, text)) return false;
    msg["content"] = std::move(text);
    msg["tool_call_id"] = *id;
    p.tool_results.push_back(std::move(msg));
  } else if (t == "image" || t == "document" || t == "search_result" || t == "container_upload") {
    return media_refused(f, where, t);
  } else {
    return bad(f, where, where + ": unknown content block type `" + t + "`.");
  }
  return true;
}

// One Anthropic message -> one or more chat messages appended to `out`.
bool read_message(fields& f, const json& m, std::size_t i, json& out) {
  const std::string where = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) return bad(f, where, where + " must be an object.");
  const json* role = string_member(m, "role");
  if (!role || (*role != "user" && *role != "assistant"))
    return bad(f, where + ".role", where + ".role must be \"user\" or \"assistant\".");
  const bool assistant = *role == "assistant";
  message_parts p;
  auto c = m.find("content");
  if (c == m.end() || c->is_null()) return bad(f, where + ".content", where + ".content is required.");
  if (c->is_string()) {
    p.text = c->get<std::string>();
  } else if (c->is_array()) {
    for (std::size_t k = 0; k < c->size(); ++k)
      if (!read_block(f, (*c)[k], where + ".content[" + std::to_string(k) + "]", assistant, p)) return false;
  } else {
    return bad(f, where + ".content", where + ".content must be a string or a list of content blocks.");
  }
  for (auto& r : p.tool_results) out.push_back(std::move(r));
  if (assistant) {
    json msg;
    msg["role"] = "assistant";
    msg["content"] = p.text;
    if (!p.tool_calls.empty()) msg["tool_calls"] = std::move(p.tool_calls);
    if (!p.reasoning.empty()) {
      msg["reasoning_content"] = p.reasoning;
      msg["reasoning"] = p.reasoning;
    }
    out.push_back(std::move(msg));
  } else if (!p.text.empty() || p.tool_results.empty()) {
    json msg;
    msg["role"] = "user";
    msg["content"] = std::move(p.text);
    out.push_back(std::move(msg));
  }
  return true;
}

void read_system(fields& f, json& messages) {
  const json* s = f.get("system");
  if (!s) return;
  std::string text;
  if (s->is_string()) {
    text = strip_attribution(s->get_ref<const std::string&>());
  } else if (s->is_array()) {
    for (std::size_t k = 0; k < s->size(); ++k) {
      const json& b = (*s)[k];
      const std::string where = "system[" + std::to_string(k) + "]";
      const json* type = b.is_object() ? string_member(b, "type") : nullptr;
      const json* t = b.is_object() ? string_member(b, "text") : nullptr;
      if (!type || *type != "text" || !t) return (void)bad(f, where, where + " must be a text block {\"type\": \"text\", \"text\": ...}.");
      std::string part = strip_attribution(t->get_ref<const std::string&>());
      if (!part.empty()) join(text, part);
    }
  } else {
    return f.fail("system", "system must be a string or a list of text blocks.");
  }
  if (text.empty()) return;
  json msg;
  msg["role"] = "system";
  msg["content"] = std::move(text);
  messages.push_back(std::move(msg));
}

void read_messages(fields& f, chat_request& r) {
  r.messages = json::array();
  read_system(f, r.messages);
  const json* v = f.get("messages");
  if (!v) return f.fail("messages", "messages is required.");
  if (!v->is_array() || v->empty()) return f.fail("messages", "messages must be a non-empty list.");
  for (std::size_t i = 0; i < v->size() && f.ok(); ++i) read_message(f, (*v)[i], i, r.messages);
}

// Anthropic-defined and server tools carry a versioned `type` and no input_schema.
bool is_custom_tool(const json& t) {
  const json* type = string_member(t, "type");
  return !type || *type == "custom" || t.contains("input_schema");
}

void read_tools(fields& f, messages_request& mr) {
  chat_request& r = mr.chat;
  if (const json* t = f.get("tools")) {
    if (!t->is_array()) return f.fail("tools", "tools must be a list.");
    json tools = json::array();
    for (std::size_t k = 0; k < t->size(); ++k) {
      const json& tool = (*t)[k];
      const std::string where = "tools[" + std::to_string(k) + "]";
      const json* name = tool.is_object() ? string_member(tool, "name") : nullptr;
      if (!name) return f.fail(where, where + " must be an object with a string `name`.");
      if (!is_custom_tool(tool)) {
        mr.ignored_tools.push_back(name->get<std::string>());
        continue;
      }
      auto schema = tool.find("input_schema");
      if (schema == tool.end() || !schema->is_object())
        return f.fail(where + ".input_schema", where + ".input_schema must be a JSON schema object.");
      json fn;
      fn["name"] = *name;
      if (const json* d = string_member(tool, "description")) fn["description"] = *d;
      fn["parameters"] = *schema;
      json ct;
      ct["type"] = "function";
      ct["function"] = std::move(fn);
      tools.push_back(std::move(ct));
    }
    if (!tools.empty()) r.tools = std::move(tools);
  }
  r.tool_choice = r.tools.is_null() ? tool_choice_mode::none : tool_choice_mode::automatic;
  const json* c = f.get("tool_choice");
  if (!c) return;
  const json* type = c->is_object() ? string_member(*c, "type") : nullptr;
  if (!type) return f.fail("tool_choice", "tool_choice must be an object with a `type`: auto, any, tool or none.");
  const std::string& ty = type->get_ref<const std::string&>();
  if (ty == "auto") r.tool_choice = tool_choice_mode::automatic;
  else if (ty == "any") r.tool_choice = tool_choice_mode::required;
  else if (ty == "none") r.tool_choice = tool_choice_mode::none;
  else if (ty == "tool") {
    const json* name = string_member(*c, "name");
    if (!name) return f.fail("tool_choice.name", "tool_choice of type tool needs a string `name`.");
    r.tool_choice = tool_choice_mode::named;
    r.tool_choice_name = name->get<std::string>();
  } else {
    return f.fail("tool_choice.type", "tool_choice.type must be auto, any, tool or none.");
  }
  auto dp = c->find("disable_parallel_tool_use");
  if (dp != c->end() && dp->is_boolean()) r.parallel_tool_calls = !dp->get<bool>();
  if (r.tool_choice != tool_choice_mode::none && r.tools.is_null()) {
    if (r.tool_choice == tool_choice_mode::automatic) {  // only server tools: nothing to choose
      r.tool_choice = tool_choice_mode::none;
      return;
    }
    return f.fail("tool_choice", "tool_choice requires tools.");
  }
  check_named_tool(f, r, "tool_choice.name");
}

void read_thinking(fields& f, chat_request& r) {
  const json* t = f.get("thinking");
  if (!t) return;
  const json* type = t->is_object() ? string_member(*t, "type") : nullptr;
  if (!type || (*type != "enabled" && *type != "disabled" && *type != "adaptive"))
    return f.fail("thinking", "thinking must be {\"type\": \"enabled\" | \"adaptive\" | \"disabled\", ...}.");
  if (auto b = t->find("budget_tokens"); b != t->end() && !b->is_null() && !as_integer(*b))
    return f.fail("thinking.budget_tokens", "thinking.budget_tokens must be an integer.");
  r.chat_template_kwargs["enable_thinking"] = *type != "disabled";
}

}  // namespace

std::string strip_attribution(std::string_view s) {
  std::string out;
  while (!s.empty()) {
    const std::size_t nl = s.find('\n');
    const std::string_view line = s.substr(0, nl);
    if (line.substr(0, k_attribution.size()) != k_attribution) {
      out += line;
      if (nl != std::string_view::npos) out += '\n';
    }
    if (nl == std::string_view::npos) break;
    s.remove_prefix(nl + 1);
  }
  return out;
}

result<messages_request> parse_messages_request(const json& body, const parse_limits& lim, bool count_only) {
  if (!body.is_object()) return fail(errc::invalid_argument, "The request body must be a JSON object.");
  messages_request mr;
  chat_request& r = mr.chat;
  fields f(body);
  f.string("model", r.model);
  read_messages(f, r);
  read_sampling(f, r.sampling, lim);
  if (f.ok() && r.sampling.n != 1) f.fail("n", "n must be 1 for /v1/messages.");
  std::vector<std::string> stops;
  f.string_list("stop_sequences", stops, lim.max_stop);
  for (auto& s : stops) r.sampling.stop.push_back(std::move(s));
  if (f.ok() && r.sampling.stop.size() > lim.max_stop)
    f.fail("stop_sequences", "at most " + std::to_string(lim.max_stop) + " stop sequences.");
  if (!count_only) {
    std::optional<std::int64_t> max_tokens;
    f.integer("max_tokens", max_tokens, 1, std::numeric_limits<std::int32_t>::max());
    if (f.ok() && !max_tokens) f.fail("max_tokens", "max_tokens: Field required");
    if (max_tokens) r.sampling.max_tokens = static_cast<int>(*max_tokens);
  }
  f.boolean("stream", r.stream.stream);
  std::optional<json> metadata;
  f.object("metadata", metadata);  // user_id: accepted, not used
  read_tools(f, mr);
  read_thinking(f, r);
  read_cache_salt(f, r.cache_salt);
  if (f.ok()) check_sampling(f, r.sampling);
  if (!f.ok()) return fail(f.error());
  return mr;
}

}  // namespace vks::api
