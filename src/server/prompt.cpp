// Chat template rendering and tokenization of request prompts.
#include "server/prompt.hpp"

#include <memory>

#include "api/harmony.hpp"
#include "api/reasoning.hpp"
#include "api/response_common.hpp"
#include "api/strict_tools.hpp"
#include "api/structured.hpp"
#include "engine/bad_words.hpp"
#include "text/jinja/chat_template.hpp"

namespace vks::server {
namespace {

std::string last_message_text(const api::json& messages) {
  if (!messages.is_array() || messages.empty()) return {};
  const auto& m = messages.back();
  // parse_chat_request already joined content parts into one string (api::join_parts).
  if (m.contains("content") && m["content"].is_string()) return m["content"].get<std::string>();
  return {};
}

std::string last_message_role(const api::json& messages) {
  if (!messages.is_array() || messages.empty()) return "assistant";
  const auto& m = messages.back();
  return m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "assistant";
}

result<std::string> render(const model_host& host, const api::chat_request& req) {
  text::jinja::chat_inputs in;
  // gpt-oss's template cannot render null content nor several calls per message (api/harmony.hpp).
  in.messages = host.tool_call_format() == api::tool_call_format::harmony ? api::harmony_history(req.messages)
                                                                           : req.messages;
  // Functionary v3.2's template concatenates the arguments as text (api/tool_calls.hpp).
  if (api::template_takes_text_arguments(host.tool_call_format())) in.messages = api::text_arguments_history(in.messages);
  in.tools = req.tools;
  in.add_generation_prompt = req.add_generation_prompt;
  in.bos_token = host.tokenizer().bos_text();
  in.eos_token = host.tokenizer().eos_text();
  in.kwargs = req.chat_template_kwargs.is_object() ? req.chat_template_kwargs : api::json::object();
  const auto ctx = text::jinja::build_context(in);
  result<std::string> out = std::string{};
  if (req.chat_template) {
    // A request's template is code from the client (vLLM, CVE-2025-61620): opt-in only.
    if (!host.trust_request_chat_template())
      return fail(errc::invalid_argument,
                  "chat_template: this server does not accept a chat_template in requests "
                  "(the operator can allow it with --trust-request-chat-template)", "chat_template");
    // Parsing is linear but not budgeted: cap the source (real templates are < 20 KB).
    constexpr std::size_t max_request_template_bytes = 256u << 10;
    if (req.chat_template->size() > max_request_template_bytes)
      return fail(errc::invalid_argument, "chat_template: longer than " + std::to_string(max_request_template_bytes) + " bytes",
                  "chat_template");
    auto t = text::jinja::chat_template::parse(*req.chat_template);
    if (!t) return fail(errc::invalid_argument, "chat_template: " + t.error().message, "chat_template");
    out = t->render(ctx, host.template_limits());
  } else {
    out = host.chat_template().render(ctx, host.template_limits());
  }
  if (!out) return fail(errc::invalid_argument, "chat template error: " + out.error().message, "messages");
  return out;
}

// vLLM's truncate_prompt_tokens: the last `keep` tokens (0 = all). True if it cut.
bool keep_last(std::vector<std::int32_t>& ids, int keep) {
  if (keep <= 0 || ids.size() <= static_cast<std::size_t>(keep)) return false;
  ids.erase(ids.begin(), ids.end() - keep);
  return true;
}

}  // namespace

result<chat_prompt> build_chat_prompt(const model_host& host, const api::chat_request& req) {
  auto text = render(host, req);
  if (!text) return fail(std::move(text).error());
  chat_prompt p;
  p.text = std::move(*text);
  p.last_content = last_message_text(req.messages);
  if (req.continue_final_message) {
    // The template closes the final message (end-of-turn tokens); the model continues it, so
    // the prompt ends right after that message's text (vLLM's rule).
    p.role = last_message_role(req.messages);
    if (!p.last_content.empty()) {
      auto at = p.text.rfind(p.last_content);
      if (at == std::string::npos)
        return fail(errc::invalid_argument, "continue_final_message: the rendered prompt does not contain the "
                                            "final message's text", "continue_final_message");
      p.text.resize(at + p.last_content.size());
    }
  } else if (!req.add_generation_prompt) {
    p.role = last_message_role(req.messages);
  }
  if (req.echo && last_message_role(req.messages) == p.role) p.echo = p.last_content;
  p.opens_reasoning = host.reasoning() && host.tool_call_format() != api::tool_call_format::harmony &&
                      api::prompt_opens_reasoning(p.text, host.reasoning_tags());
  p.ids = host.tokenizer().encode(p.text, req.add_special_tokens, /*parse_special=*/true);
  keep_last(p.ids, req.truncate_prompt_tokens);
  if (p.ids.empty()) return fail(errc::invalid_argument, "the rendered chat prompt is empty", "messages");
  return p;
}

result<completion_prompt> build_completion_prompt(const model_host& host, const api::prompt_input& in,
                                                  bool add_special_tokens, int truncate_prompt_tokens) {
  completion_prompt p;
  const auto& tok = host.tokenizer();
  if (in.is_tokens) {
    for (auto id : in.tokens)
      if (id < 0 || id >= tok.n_vocab())
        return fail(errc::invalid_argument, "token id " + std::to_string(id) + " is out of vocabulary range [0, " +
                                                std::to_string(tok.n_vocab()) + ")", "prompt");
    p.ids = in.tokens;
    p.text = tok.decode(p.ids, /*skip_special=*/false);
  } else {
    p.text = in.text;
    p.ids = tok.encode(in.text, add_special_tokens, /*parse_special=*/true);
  }
  if (keep_last(p.ids, truncate_prompt_tokens)) p.text = tok.decode(p.ids, /*skip_special=*/false);
  if (p.ids.empty()) return fail(errc::invalid_argument, "the prompt is empty", "prompt");
  return p;
}

api::chat_output_settings chat_output(const model_host& host, const api::chat_request& req, const chat_prompt& p) {
  api::chat_output_settings o;
  o.n = req.sampling.n;
  o.reasoning = host.reasoning();
  o.starts_in_reasoning = p.opens_reasoning;
  o.include_reasoning = req.include_reasoning;
  o.logprobs = req.logprobs;
  o.top_logprobs = req.top_logprobs;
  o.role = p.role;
  switch (req.tool_choice) {
    case api::tool_choice_mode::none: o.tool_calls = api::tool_call_format::none; break;
    case api::tool_choice_mode::automatic: o.tool_calls = host.tool_call_format(); break;
    case api::tool_choice_mode::required: o.tool_calls = api::tool_call_format::llama3_json; break;
    case api::tool_choice_mode::named:
      o.tool_calls = api::tool_call_format::named_arguments;
      o.tool_name = req.tool_choice_name;
      break;
  }
  o.finish_tool_calls = req.tool_choice != api::tool_choice_mode::named;
  o.tags = host.reasoning_tags();
  o.parallel_tool_calls = req.parallel_tool_calls;
  // Offered tools (an empty catalog when tool_choice is none: any call the model still
  // writes is kept as content with a warning).
  auto catalog = std::make_shared<api::tool_catalog>();
  if (req.tool_choice != api::tool_choice_mode::none) *catalog = api::tool_catalog::from_tools(req.tools);
  o.tools = std::move(catalog);
  // Harmony frames every reply (reasoning and final text too): always parsed.
  if (host.tool_call_format() == api::tool_call_format::harmony &&
      (req.tool_choice == api::tool_choice_mode::none || req.tool_choice == api::tool_choice_mode::automatic)) {
    o.tool_calls = api::tool_call_format::harmony;
    o.reasoning = true;
    o.starts_in_reasoning = false;
  }
  if (req.return_token_ids) o.prompt_token_ids = p.ids;
  o.options.prompt_tokens_details = host.prompt_tokens_details();
  return o;
}

result<std::optional<engine::output_constraint>> chat_constraint(const model_host& host, const api::chat_request& req,
                                                                 const chat_prompt& p) {
  auto forced = api::tool_choice_constraint(req);
  if (!forced && !req.structured && host.strict_tools() && req.tool_choice == api::tool_choice_mode::automatic)
    forced = api::strict_tools_constraint(req, host.strict_form());
  return api::request_constraint(forced ? forced : req.structured, host.reasoning() && p.opens_reasoning);
}

bool reply_needs_special_tokens(const api::chat_output_settings& o) {
  return api::tool_format_needs_special_tokens(o.tool_calls) || (o.reasoning && api::reasoning_tags_are_special(o.tags));
}

void tokenize_bad_words(const model_host& host, engine::sampling_params& p) {
  if (p.bad_words.empty()) return;
  p.bad_words_ids = engine::bad_words_token_ids(host.tokenizer(), p.bad_words);
  p.bad_words = {};
}

result<engine::request> build_lmi_request(const model_host& host, const api::lmi_request& req,
                                          api::lmi_output_settings& out) {
  const auto& c = req.completion;
  auto prompt = build_completion_prompt(host, c.prompts.at(0), c.add_special_tokens, c.truncate_prompt_tokens);
  if (!prompt) return fail(std::move(prompt).error());
  auto constraint = api::request_constraint(c.structured, false);
  if (!constraint) return fail(std::move(constraint).error());
  out.prompt_text = prompt->text;
  out.details = req.details;
  out.return_full_text = req.return_full_text;
  out.prefill = req.prefill;
  engine::request er;
  er.id = "lmi-" + api::random_uuid_hex();
  er.prompt = std::move(prompt->ids);
  er.params = c.sampling;
  tokenize_bad_words(host, er.params);
  er.constraint = std::move(*constraint);
  er.cache_salt = c.cache_salt;
  return er;
}

}  // namespace vks::server
