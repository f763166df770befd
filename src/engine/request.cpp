// Small helpers of request.hpp.
#include "engine/request.hpp"

#include <string>

namespace vks::engine {

const char* to_string(finish_reason r) noexcept {
  switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::abort: return "abort";
    case finish_reason::error: return "error";
  }
  return "error";
}

result<int> resolve_max_tokens(int n_prompt, int requested, int n_ctx) {
  if (n_prompt >= n_ctx)
    return fail(errc::context_overflow,
                "This model's maximum context length is " + std::to_string(n_ctx) +
                    " tokens. However, your request has " + std::to_string(n_prompt) +
                    " input tokens. Please reduce the length of the input messages.");
  if (requested < 0) return n_ctx - n_prompt;
  if (static_cast<long long>(n_prompt) + requested > n_ctx)
    return fail(errc::context_overflow,
                "This model's maximum context length is " + std::to_string(n_ctx) +
                    " tokens. However, you requested " + std::to_string(n_prompt + static_cast<long long>(requested)) +
                    " tokens (" + std::to_string(n_prompt) + " in the messages, " + std::to_string(requested) +
                    " in the completion). Please reduce the length of the messages or completion.",
                "max_tokens");
  return requested;
}

}  // namespace vks::engine
