// Public API of the Jinja engine: parse a Hugging Face chat template once, render it many
// times. Rendering follows HF's apply_chat_template: ImmutableSandboxedEnvironment with
// trim_blocks/lstrip_blocks, loopcontrols, HF's tojson, raise_exception and strftime_now.
// Thread-safety: a parsed chat_template is immutable; render() is const and may run
// concurrently from many threads. Copies share the parsed tree.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "text/jinja/budget.hpp"

namespace vks::text::jinja {

struct compiled_template;

class chat_template {
 public:
  // errc::parse with "line L, column C" in the message when the source is not valid Jinja.
  // strftime_now uses the wall clock unless VKS_FIXED_NOW is set at parse time
  // (epoch seconds or "YYYY-MM-DD[THH:MM:SS]", UTC), which makes renders reproducible.
  static result<chat_template> parse(std::string source);

  // Every key of `context` (a JSON object) becomes a template variable. Errors:
  // errc::invalid_argument; a template's raise_exception(msg) yields exactly `msg`; an
  // exceeded budget (`limits`: steps, bytes, nesting, deadline) "chat template exceeded its
  // step budget (N) at line L, column C" (or byte/time budget, "... nested too deeply
  // (limit N)"); other failures "chat template error at line L, column C: ...".
  // `limits.fixed_now` is ignored (set_fixed_now / VKS_FIXED_NOW decide).
  // `stats`, when given, receives what a successful render used.
  result<std::string> render(const nlohmann::ordered_json& context, const render_limits& limits,
                             render_stats* stats = nullptr) const;
  result<std::string> render(const nlohmann::ordered_json& context) const { return render(context, render_limits{}); }

  // Overrides the strftime_now clock (epoch seconds, UTC; -1 restores the wall clock).
  void set_fixed_now(std::int64_t epoch_seconds);

  const std::string& source() const;

 private:
  std::shared_ptr<const compiled_template> impl_;
  std::int64_t fixed_now_ = -1;
};

// The inputs of one chat rendering, in OpenAI/HF shapes.
struct chat_inputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{role, content, ...}]
  nlohmann::ordered_json tools;  // array of tool definitions, or null when none were given
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
};

// HF's rendering context: messages, tools (None when absent), documents (None),
// add_generation_prompt, bos_token, eos_token, then every chat_template_kwargs key
// (which may override the others, as **kwargs does in transformers).
nlohmann::ordered_json build_context(const chat_inputs& in);

// Parses the CLI/test request shape {"messages": [...], "tools": [...],
// "add_generation_prompt": b, ...other keys become kwargs}. errc::invalid_argument on a bad shape.
result<chat_inputs> inputs_from_request(const nlohmann::ordered_json& request);

}  // namespace vks::text::jinja
