// job_output: one prepared job's api response builder behind one interface (engine events
// in; stream payloads or the whole response out), so drive() and every transport treat
// chat, completions and LMI alike. The chat echo (the prompt's last message prepended to
// each choice's content) is applied here, once. Loop thread only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/json.hpp"
#include "base/error.hpp"
#include "server/generation.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"

namespace vks::server {

class job_output {
 public:
  virtual ~job_output() = default;
  virtual bool streaming() const = 0;
  // Streaming: payloads (SSE data / JSON lines objects) before the first event, per event,
  // and after the last one (usage chunk). Non-streaming: nothing.
  virtual std::vector<std::string> start() { return {}; }
  virtual std::vector<std::string> on_event(const tagged_event& ev) = 0;
  virtual std::vector<std::string> finish() { return {}; }
  // Every choice finished, or an error ended the response.
  virtual bool done() const = 0;
  // Non-streaming, once done(): the error that ended the response, or nullopt and build().
  virtual std::optional<vks::error> error() const = 0;
  virtual api::json build() const = 0;
};

// The output of `job` (it reads the job's settings; the job may be consumed afterwards).
std::unique_ptr<job_output> make_output(const generation_job& job);

// Whether the job's answer is a stream, and in JSON lines (LMI) rather than SSE.
bool job_streams(const generation_job& job);
bool job_json_lines(const generation_job& job);
// Whether the stream is typed SSE (event: <type>; the messages and responses formats), and
// the error body shape of the job's answers.
bool job_typed_events(const generation_job& job);
error_shape job_error_shape(const generation_job& job);

// The messages (Anthropic) output of a chat job (messages_output.cpp).
std::unique_ptr<job_output> make_messages_output(const chat_job& job);
// The responses (OpenAI Responses API) output of a chat job (responses_output.cpp).
std::unique_ptr<job_output> make_responses_output(const chat_job& job);

}  // namespace vks::server
