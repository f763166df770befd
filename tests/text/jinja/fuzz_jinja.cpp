// libFuzzer target for the Jinja engine: the input is a template source; it is parsed and,
// when valid, rendered against a small chat context. Any crash, sanitizer report, hang or
// unbounded allocation is a bug (errors must come back as values). The render budgets are
// small (and the deadline off, for reproducible runs) so that the fuzzer reaches every
// budget's exit; tests/fuzz/corpus/fuzz_jinja/ keeps inputs that once crashed.
// Build (clang, -Dfuzz=true): see tests/text/jinja/meson.build's fuzz_jinja target.
#include <cstddef>
#include <cstdint>
#include <string>

#include "text/jinja/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "sys"},
                 {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                 {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
                   "function": {"name": "f", "arguments": {"a": 1}}}]},
                 {"role": "tool", "content": "r"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  std::string src(reinterpret_cast<const char*>(data), size);
  auto t = vks::text::jinja::chat_template::parse(std::move(src));
  if (!t) return 0;
  t->set_fixed_now(0);
  vks::text::jinja::render_limits lim;
  lim.max_steps = 20'000;
  lim.max_bytes = 1u << 20;
  lim.max_output_bytes = 1u << 20;
  lim.max_value_depth = 32;
  lim.max_call_depth = 16;
  lim.max_recursion = 256;
  lim.timeout_ms = 0;
  auto r = t->render(ctx, lim);
  (void)r;
  return 0;
}
