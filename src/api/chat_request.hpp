// POST /v1/chat/completions request: parsing, validation (contracts.md 5.1/5.2, checklist
// 29-49) and normalisation of the messages for the chat template.
// Message normalisation (what the Jinja context receives as `messages`):
// - content: a string stays; an array of parts becomes one string, text parts ("text",
//   "input_text", "refusal") joined with "\n" (vLLM's string content format); media parts
//   (image_url, input_audio, file, video_url, ...) are rejected with 400 (text-only models);
//   null/absent content is allowed for assistant messages only, and becomes "" as in vLLM
//   (Qwen3's and gpt-oss's templates test `'x' in message.content`, which fails on null).
// - assistant tool_calls[].function.arguments given as a JSON string are parsed into an
//   object (templates iterate over them, as in vLLM); invalid JSON is kept as the string.
// - assistant `reasoning_content` or `reasoning` is copied to both keys, and to `thinking`
//   when that is absent (gpt-oss's template renders it as the analysis channel), so a reply
//   sent back in history renders in the model's own format.
// - every other key of a message is kept as sent.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "api/json.hpp"
#include "api/sampling.hpp"
#include "base/result.hpp"
#include "engine/request.hpp"
#include "text/grammar/structural_tag.hpp"

namespace vks::api {

enum class tool_choice_mode { none, automatic, required, named };

// One constraint on the output (compiled by structured.hpp, applied by the engine).
struct structured_output {
  enum class kind { json_schema, json_object, regex, choice, grammar, structural_tag,
                    built };  // appended (#24): `built`, a grammar made by the server (--strict-tools pythonic)
  kind k = kind::json_schema;
  json value;  // schema (object or bool), regex/grammar string, array of choice strings
  std::optional<text::grammar::structural_tag> tag;  // kind structural_tag (validated)
  // structured_outputs options (vLLM names): JSON kinds only.
  bool any_whitespace = true;             // !disable_any_whitespace
  bool additional_properties = false;     // !disable_additional_properties, see json_schema.hpp
  std::string whitespace_pattern;         // whitespace_pattern / guided_whitespace_pattern
  // appended (#24): control tokens the grammar may match as their text (a tool format's
  // markers, --strict-tools); any other control token stays refused.
  std::vector<std::string> special_texts;
  std::shared_ptr<const text::grammar::grammar> built;  // kind built
};

struct stream_settings {
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage_stats = false;
};

struct chat_request {
  std::string model;                  // "" when omitted (the served model is used)
  json messages;                      // normalised array (see above)
  engine::sampling_params sampling;   // max_tokens -1 when unset; logprobs set from below
  stream_settings stream;
  bool logprobs = false;
  int top_logprobs = 0;
  bool echo = false;
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  bool add_special_tokens = false;
  std::optional<std::string> chat_template;
  json chat_template_kwargs = json::object();  // reasoning_effort "none" adds enable_thinking false
  json tools;                         // null, or a non-empty array of function tools
  tool_choice_mode tool_choice = tool_choice_mode::none;
  std::string tool_choice_name;       // for tool_choice_mode::named
  bool parallel_tool_calls = true;
  std::optional<structured_output> structured;
  bool include_reasoning = true;
  std::optional<std::string> reasoning_effort;
  std::string request_id;             // body `request_id`, "" if none
  int truncate_prompt_tokens = 0;     // keep the last k prompt tokens; 0 = all (sampling.hpp)
  bool return_token_ids = false;      // vLLM: prompt_token_ids and per-choice token_ids
  std::string cache_salt;             // vLLM cache_salt (sampling.hpp); "" = none
};

result<chat_request> parse_chat_request(const json& body, const parse_limits& lim = {});

// Shared with the completions parser: response_format, structured_outputs and the legacy
// guided_* keys into one constraint (two kinds at once -> 400).
void read_structured_output(fields& f, std::optional<structured_output>& out);
// stream + stream_options (stream_options without stream -> 400).
void read_stream(fields& f, stream_settings& s);
// A named tool_choice must name one of r.tools (OpenAI's tool shape, which every dialect's
// parser converts to); otherwise fails `param` on f. No-op for the other modes.
void check_named_tool(fields& f, const chat_request& r, const char* param);

}  // namespace vks::api
