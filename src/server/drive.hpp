// drive: the one loop from a prepared job to a transport. It submits the job's engine
// requests (one generation), reads their events, feeds the job's output (job_output.hpp)
// and hands what it produces to an output_sink: the transports (HTTP SSE / JSON / JSON
// lines in http_sink.hpp, WebSocket frames in bidi_session.cpp) only frame payloads.
// Loop thread only.
#pragma once

#include <cstdint>

#include <stop_token>
#include <string>
#include <string_view>

#include "api/json.hpp"
#include "base/error.hpp"
#include "rt/task.hpp"
#include "server/handlers.hpp"
#include "server/otlp.hpp"
#include "server/service.hpp"

namespace vks::server {

// Where one job's answer goes. A streaming answer is begin(), add()... with flush() after
// each batch of events, then end(); a non-streaming one is reply() or fail(). fail() also
// answers a job that could not be submitted. A task returning false: the peer is gone.
class output_sink {
 public:
  virtual ~output_sink() = default;
  // Fires when the answer should stop: the job is aborted, and drive() goes on reading the
  // abort's terminal events (so a stream still ends properly) until gone() fires too.
  virtual std::stop_token cancelled() = 0;
  // Fires when the peer left: drive() returns at once (the generation aborts the job).
  virtual std::stop_token gone() = 0;
  virtual rt::task<bool> begin() = 0;
  virtual void add(std::string_view payload) = 0;
  virtual rt::task<bool> flush() = 0;
  virtual rt::task<void> end() = 0;
  virtual rt::task<void> reply(const api::json& body) = 0;
  virtual rt::task<void> fail(const vks::error& e) = 0;
};

// Runs `job` (consumed: its prompts move into the engine requests) to completion on `sink`.
// The model is ready (the job was prepared). `salt_prefix`: cache_salt_prefix (replies.hpp);
// `session`: the engine key of a SageMaker session (0 = none). With an active trace
// exporter (otlp.hpp) the request's span is recorded and queued there; `trace` gives its
// traceparent and arrival time (nullptr: no parent, starts now).
rt::task<void> drive(service& svc, generation_job& job, output_sink& sink, const std::string& salt_prefix,
                     std::uint64_t session = 0, const trace_info* trace = nullptr);

}  // namespace vks::server
