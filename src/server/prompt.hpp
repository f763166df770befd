// Prompts for the engine: chat messages rendered through the chat template (the model's,
// --chat-template, or the request's `chat_template`) and tokenized; completion prompts
// tokenized (or taken as token ids). Errors are 400s naming the parameter.
// Thread-safe (templates and tokenizers are immutable).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/completion_request.hpp"
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

struct completion_prompt {
  std::string text;                // the prompt as text (decoded when given as ids)
  std::vector<std::int32_t> ids;
};

result<completion_prompt> build_completion_prompt(const model_host& host, const api::prompt_input& in,
                                                  bool add_special_tokens);

}  // namespace vks::server
