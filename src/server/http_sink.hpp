// http_sink: the HTTP transports of drive() (drive.hpp) on one connection's response
// writer: JSON (a whole response, or an OpenAI error object with its status), SSE (the
// OpenAI event stream, ended by `data: [DONE]`), typed SSE (Anthropic's and the Responses
// API's streams: each payload is a JSON object whose first member is its `type`, sent as
// `event: <type>` + `data: <payload>`, no terminator) or JSON lines (LMI streaming: one object
// per line). Streamed payloads are buffered and leave in one write per flush(), so events
// that queued up during a step share one write. A client disconnect cancels the job.
// Loop thread only.
#pragma once

#include <string>
#include <string_view>

#include "http/writer.hpp"
#include "server/drive.hpp"
#include "server/replies.hpp"

namespace vks::server {

class http_sink final : public output_sink {
 public:
  enum class framing { json, sse, sse_typed, json_lines };
  // Starts watching for the client leaving. `shape`: the body of fail() answers.
  http_sink(service& svc, http::response_writer& w, framing f, error_shape shape = error_shape::openai);

  std::stop_token cancelled() override { return w_.disconnected(); }
  std::stop_token gone() override { return w_.disconnected(); }
  rt::task<bool> begin() override;
  void add(std::string_view payload) override;
  rt::task<bool> flush() override;
  rt::task<void> end() override;
  rt::task<void> reply(const api::json& body) override;
  rt::task<void> fail(const vks::error& e) override;

 private:
  service& svc_;
  http::response_writer& w_;
  framing framing_;
  error_shape shape_;
  std::string buf_;
};

}  // namespace vks::server
