// SageMaker LMI/TGI schema responses (contracts.md 3.6):
//   non-stream: {"generated_text": "...", "details"?: {"finish_reason", "generated_tokens",
//                "inputs", "tokens": [{"id", "text", "log_prob"}]}}
//   stream (application/jsonlines): one {"token": {"id", "text", "log_prob"}} line per
//   generated token; the last line also has "generated_text" (and "details" when asked).
//   The last token line is held until the finish event so it can carry them.
//   An error mid-stream: one line {"error": {...OpenAI error...}, "details":
//   {"finish_reason": "error"}}.
// With prefill (decoder_input_details, non-stream): details.prefill lists the prompt
// tokens that have a logprob, [{"id", "text", "log_prob"}] (the first one has none and is
// left out, as DJL's vLLM handler does).
// finish_reason: "length", "eos_token" (EOS), "stop_sequence" (stop string or stop id).
// return_full_text prepends the prompt to generated_text. Requests have n = 1.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/choice_tracker.hpp"
#include "api/json.hpp"
#include "base/error.hpp"
#include "engine/request.hpp"

namespace vks::api {

struct lmi_output_settings {
  std::string prompt_text;
  bool details = false;
  bool return_full_text = false;
  bool prefill = false;  // details.prefill from the prompt_logprobs_event
};

const char* lmi_finish_reason(engine::finish_reason r, const engine::stop_reason& s) noexcept;

class lmi_accumulator {
 public:
  explicit lmi_accumulator(lmi_output_settings s) : settings_(std::move(s)) {}
  void on_event(const engine::event& ev);
  bool done() const noexcept { return tracker_.done(); }
  const std::optional<vks::error>& error() const noexcept { return tracker_.error(); }
  json build() const;

 private:
  lmi_output_settings settings_;
  std::string text_;
  json tokens_ = json::array();
  json prefill_ = json::array();
  std::string finish_ = "length";
  choice_tracker tracker_{1, 1};
};

class lmi_stream {
 public:
  explicit lmi_stream(lmi_output_settings s) : settings_(std::move(s)) {}
  // JSON lines without the trailing "\n".
  std::vector<std::string> on_event(const engine::event& ev);
  bool done() const noexcept { return tracker_.done(); }

 private:
  // Token lines for a piece's tokens; each sends the line held before it.
  template <class E>
  void token_lines(const E& piece, std::vector<std::string>& out);

  lmi_output_settings settings_;
  std::string text_;
  json tokens_ = json::array();   // kept for details
  std::optional<json> held_;      // the latest token line, not yet sent
  choice_tracker tracker_{1, 1};
};

}  // namespace vks::api
