// The generation handlers shared by the OpenAI routes and SageMaker /invocations, in two
// halves. prepare_*: a decoded JSON body -> a typed job (validation, chat template,
// grammar, tokenization); pure CPU, run on a prep_pool worker, any thread; the job keeps
// only typed fields (no JSON tree, no body). serve_job: drive the job on the connection's
// loop (drive.hpp) and answer over HTTP; client disconnects abort the engine requests at
// once. The bidi WebSocket prepares with the same functions and drives on its own sink. `svc` outlives the I/O threads and the prep workers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "api/chat_request.hpp"
#include "api/chat_response.hpp"
#include "api/completion_request.hpp"
#include "api/completion_response.hpp"
#include "api/embedding_response.hpp"
#include "api/json.hpp"
#include "api/lmi_response.hpp"
#include "base/result.hpp"
#include "http/request.hpp"
#include "http/writer.hpp"
#include "rt/task.hpp"
#include "server/generation.hpp"
#include "server/prompt.hpp"
#include "server/service.hpp"

namespace vks::server {

// Which API's shapes a chat job answers in: the same prompt, constraint and per-choice text
// pipeline, another job_output (job_output.hpp).
enum class chat_format { chat, messages, responses };

// What a responses-format job needs beyond the chat job: the request settings its response
// repeats, the conversation so far (for the store) and where to store it (nullptr: not
// stored). Shared, immutable: the job's output reads it after the job was consumed.
struct responses_context {
  api::json echo;
  api::json conversation;  // previous conversation + this input (chat messages)
  response_store* store = nullptr;
};

struct chat_job {
  api::chat_request req;  // messages, tools, template and structured output dropped once used
  chat_prompt prompt;     // text dropped once tokenized
  api::response_meta meta;
  api::chat_output_settings out;
  std::optional<engine::output_constraint> constraint;
  chat_format format = chat_format::chat;
  std::shared_ptr<const responses_context> responses;  // chat_format::responses only
};

struct completion_job {
  api::completion_request req;  // prompts and structured output dropped once used
  std::vector<completion_prompt> prompts;
  api::response_meta meta;
  api::completion_output_settings out;
  std::vector<tagged_event> preset;  // events produced without the engine (echo-only requests)
  std::optional<engine::output_constraint> constraint;
};

struct lmi_job {
  engine::request er;
  api::lmi_output_settings out;
  bool stream = false;
};

// POST /v1/embeddings: one engine request per input (prefilled, pooled, never sampled).
struct embedding_job {
  std::vector<std::vector<engine::token_id>> prompts;  // moved into the engine requests
  std::string id;
  engine::pooling pooling = engine::pooling::last;
  api::embedding_output_settings out;
};

using generation_job = std::variant<chat_job, completion_job, lmi_job, embedding_job>;

// Worker side. `request_id`: the client's X-Request-Id ("" = none); each checks that the
// model is ready first (503 otherwise) and then the model name.
result<chat_job> prepare_chat(const service& svc, const api::json& body, const std::string& request_id);
result<completion_job> prepare_completion(const service& svc, const api::json& body, const std::string& request_id);
result<lmi_job> prepare_lmi(const service& svc, const api::json& body);
// The steps after parsing that every chat dialect shares: model check, template and
// tokens, constraint, output settings; ids are id_prefix + uuid (or + request_id).
result<chat_job> make_chat_job(const service& svc, api::chat_request req, std::string_view id_prefix,
                               const std::string& request_id);
// POST /v1/messages (Anthropic Messages, messages_handler.cpp): a chat job in the messages format.
result<chat_job> prepare_messages(const service& svc, const api::json& body, const std::string& request_id);
// POST /v1/responses (OpenAI Responses, responses_handler.cpp): a chat job in the responses
// format; previous_response_id continues a stored conversation (404 when unknown).
result<chat_job> prepare_responses(const service& svc, const api::json& body, const std::string& request_id);

// POST /v1/embeddings (embeddings_handler.cpp): the inputs tokenized (texts with the
// model's special tokens), the pooling and width checked (400 for a model that serves no
// embeddings, or dimensions beyond its width).
result<embedding_job> prepare_embeddings(const service& svc, const api::json& body, const std::string& request_id);

// Dispatch by body (api::classify_invocation: `messages`, `prompt` or `inputs`) to one of
// the above; /invocations and the bidi WebSocket. Worker side.
result<generation_job> prepare_generation(const service& svc, const api::json& body, const std::string& request_id);

// Loop side: the model is ready (the job was prepared). Answers over HTTP: drive()
// (drive.hpp) on an http_sink (JSON, SSE, or JSON lines for LMI). `salt_prefix`: the
// caller's cache_salt_prefix (replies.hpp), taken from the HTTP request on the loop.
// `session`: the engine key of a SageMaker session (engine::request::session; 0 = none).
rt::task<void> serve_job(service& svc, http::response_writer& w, generation_job& job, const std::string& salt_prefix,
                         std::uint64_t session = 0);

}  // namespace vks::server
