// Prompts for the engine: chat messages rendered through the chat template (the model's,
// --chat-template, or the request's `chat_template` when --trust-request-chat-template; every
// render under the host's template budgets) and tokenized; completion prompts
// tokenized (or taken as token ids). Errors are 400s naming the parameter. Also what the
// model and request decide about a chat reply beyond its prompt: output settings
// (reasoning split, tool calls) and the structured-output constraint.
// Thread-safe (templates and tokenizers are immutable).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/chat_response.hpp"
#include "api/completion_request.hpp"
#include "api/lmi_response.hpp"
#include "base/result.hpp"
#include "server/model_host.hpp"

namespace vks::server {

struct chat_prompt {
  std::string text;                // the rendered template
  std::vector<std::int32_t> ids;
  bool opens_reasoning = false;    // the prompt leaves <think> open (api::prompt_opens_reasoning)
  std::string role = "assistant";  // role of the reply (the last message's with continue_final_message)
  std::string last_content;        // text of the last message (parts already joined by "\n")
  // With echo: what to repeat before the reply: the last message's text when its role is
  // the reply's role (vLLM's rule), else empty.
  std::string echo;
};

result<chat_prompt> build_chat_prompt(const model_host& host, const api::chat_request& req);

// Output settings of a chat reply: n, reasoning, logprobs, role, and how it becomes tool
// calls (auto: parsed in the format the template teaches or --tool-call-parser forces,
// api::tool_format_rules, names checked against the request's tools, else content;
// gpt-oss harmony is always parsed; required/named: the grammar forced a list of calls /
// the named function's arguments, see api::tool_choice_constraint).
api::chat_output_settings chat_output(const model_host& host, const api::chat_request& req, const chat_prompt& p);

// The reply's markers are control tokens (tool-call formats such as harmony, Mistral,
// DeepSeek, Kimi; reasoning tags other than <think>): the chat request decodes with special
// tokens (skip_special_tokens false), as vLLM's parsers ask, or the parsers could not see them.
bool reply_needs_special_tokens(const api::chat_output_settings& o);

// The engine constraint: the request's structured output, or what tool_choice forces (or,
// with --strict-tools and tool_choice auto, the offered tools' structural tag);
// behind the reasoning end tag when the prompt leaves reasoning open.
result<std::optional<engine::output_constraint>> chat_constraint(const model_host& host, const api::chat_request& req,
                                                                 const chat_prompt& p);

struct completion_prompt {
  std::string text;                // the prompt as text (decoded when given as ids)
  std::vector<std::int32_t> ids;
};

// truncate_prompt_tokens > 0 keeps only the last that many tokens (and `text` becomes
// their decoding); 0 keeps all. The chat prompt applies the request's own setting.
result<completion_prompt> build_completion_prompt(const model_host& host, const api::prompt_input& in,
                                                  bool add_special_tokens, int truncate_prompt_tokens = 0);

// vLLM's bad_words tokenized now (on a prep worker) rather than in engine::submit (on the
// loop): fills p.bad_words_ids and empties p.bad_words, so submit has nothing left to do.
void tokenize_bad_words(const model_host& host, engine::sampling_params& p);

// The LMI/TGI schema's one engine request: its prompt (truncated as asked), sampling,
// structured-output constraint; `out` receives what the reply needs (prompt text,
// details, return_full_text, prefill). The id is "lmi-<uuid>".
result<engine::request> build_lmi_request(const model_host& host, const api::lmi_request& req,
                                          api::lmi_output_settings& out);

}  // namespace vks::server
