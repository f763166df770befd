// model_host: everything `vkserve serve` loads before it can generate: the model file, the
// compute backend, the tokenizer, the chat template, the runner (weights + KV pool) and the
// engine thread; plus the warm-up generation. Owned by cmd_serve's main thread; once
// loaded it is read-only except through the engine's thread-safe interface, so route
// handlers on any I/O thread may use it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/reasoning.hpp"
#include "api/sampling.hpp"
#include "api/strict_tools.hpp"
#include "api/tool_calls.hpp"
#include "base/result.hpp"
#include "engine/llm_engine.hpp"
#include "gpu/backend.hpp"
#include "model/model_file.hpp"
#include "model/runner.hpp"
#include "server/serve_options.hpp"
#include "text/jinja/chat_template.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace vks::server {

class model_host {
 public:
  // Loads everything and starts the engine thread (slow: seconds to minutes). `phase`, when
  // set, is told each step as it begins (for systemd's STATUS=).
  using phase_fn = std::function<void(std::string)>;
  static result<std::unique_ptr<model_host>> load(const serve_options& o, const phase_fn& phase = {});
  ~model_host();  // stops the engine thread before the runner and backend go away

  // One short greedy generation through the engine (compiles pipelines, touches weights).
  result<void> warm_up();

  engine::llm_engine& engine() { return *engine_; }
  const text::tokenizer& tokenizer() const { return *tok_; }
  const text::jinja::chat_template& chat_template() const { return *template_; }
  // Whether requests may bring their own `chat_template` (--trust-request-chat-template),
  // and the budgets of every render (the model's template and a request's).
  bool trust_request_chat_template() const noexcept { return trust_request_template_; }
  const text::jinja::render_limits& template_limits() const noexcept { return template_limits_; }
  bool reasoning() const noexcept { return reasoning_; }  // split <think> text out
  // The tool-call format the chat template teaches (api::tool_call_format_of_template):
  // replies are parsed for such calls when a request offers tools.
  api::tool_call_format tool_call_format() const noexcept { return tool_format_; }
  // The reasoning markers of the template (api::reasoning_tags_of_template; <think> by default).
  const api::reasoning_tags& reasoning_tags() const noexcept { return reasoning_tags_; }
  bool strict_tools() const noexcept { return strict_tools_; }  // --strict-tools
  api::strict_form strict_form() const noexcept { return strict_form_; }  // the call syntax it holds
  int n_ctx() const noexcept { return engine_->limits().n_ctx; }
  // The request-parsing limits that follow from the engine (n, logprobs, vocabulary).
  api::parse_limits parse_limits() const noexcept {
    const auto& lim = engine_->limits();
    api::parse_limits pl;
    pl.max_n = lim.max_n;
    pl.max_logprobs = lim.max_logprobs;
    pl.n_vocab = lim.n_vocab;
    pl.max_model_len = lim.n_ctx;
    pl.max_seqs_per_request = max_seqs_per_request_;
    return pl;
  }
  const std::string& device_name() const noexcept { return device_name_; }
  // usage.prompt_tokens_details carries cached_tokens (--enable-prompt-tokens-details).
  bool prompt_tokens_details() const noexcept { return prompt_tokens_details_; }
  // How /v1/embeddings pools this model's hidden rows: the model's own pooling (GGUF
  // pooling_type, sentence-transformers config), or last-token for a generation model
  // served with --embeddings; else a 400 saying why this model serves no embeddings.
  result<engine::pooling> embedding_pooling() const;
  int n_embd() const noexcept;

 private:
  model_host() = default;
  result<void> load_template(const serve_options& o);

  std::optional<model::model_file> file_;
  std::unique_ptr<gpu::backend> backend_;
  std::unique_ptr<text::tokenizer> tok_;
  std::optional<text::jinja::chat_template> template_;
  bool trust_request_template_ = false;
  text::jinja::render_limits template_limits_;
  std::unique_ptr<model::runner> runner_;
  std::unique_ptr<engine::llm_engine> engine_;
  bool reasoning_ = false;
  api::tool_call_format tool_format_ = api::tool_call_format::none;
  api::reasoning_tags reasoning_tags_;
  bool strict_tools_ = false;
  api::strict_form strict_form_ = api::strict_form::none;
  std::string device_name_;
  int max_seqs_per_request_ = 256;  // --max-sequences-per-request
  bool prompt_tokens_details_ = false;  // --enable-prompt-tokens-details
  bool embeddings_flag_ = false;        // --embeddings
};

}  // namespace vks::server
