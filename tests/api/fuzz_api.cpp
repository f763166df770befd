// Fuzz target for the API layer's input handling: request bodies and the parsers of
// generated text. The first input byte picks the mode, the second a piece size; the rest is
// the data.
// - Request bodies: parse_json_body (UTF-8 check, JSON decode), classify_invocation, then
//   the chat, completion and LMI parsers whatever the classification (a body may be valid
//   for none). Each must return a value or an error and never throw or crash.
// - Tool calls (hermes, llama3_json, named_arguments) and reasoning splitting, whose
//   contract is that the result does not depend on how the text is cut into pushes: the
//   text pushed whole and pushed in pieces of the given size must give the same content,
//   reasoning and calls; hermes and llama3_json calls carry arguments that parse as JSON.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "api/chat_request.hpp"
#include "api/completion_request.hpp"
#include "api/invocations.hpp"
#include "api/reasoning.hpp"
#include "api/tool_calls.hpp"

using namespace vks::api;

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_api: %s\n", what);
    std::abort();
  }
}

void requests(std::string_view body) {
  auto j = parse_json_body(body);
  if (!j) return;
  (void)classify_invocation(*j);
  parse_limits lim;
  lim.n_vocab = 1000;
  lim.max_model_len = 4096;
  (void)parse_chat_request(*j, lim);
  (void)parse_completion_request(*j, lim);
  (void)parse_lmi_request(*j, lim);
}

struct tool_result {
  std::string content;
  std::vector<tool_call> calls;
};

tool_result run_tools(tool_call_format f, std::string_view text, std::size_t piece) {
  tool_call_parser p(f, "fn");
  tool_result r;
  auto take = [&](tool_call_parser::delta d) {
    r.content += d.content;
    for (auto& c : d.calls) r.calls.push_back(std::move(c));
  };
  for (std::size_t i = 0; i < text.size(); i += piece) take(p.push(text.substr(i, piece)));
  take(p.flush());
  return r;
}

void tools(std::string_view text, std::size_t piece) {
  for (auto f : {tool_call_format::hermes, tool_call_format::llama3_json, tool_call_format::named_arguments}) {
    const tool_result whole = run_tools(f, text, text.size() + 1), cut = run_tools(f, text, piece);
    check(whole.content == cut.content, "tool-call content depends on the pushes");
    check(whole.calls.size() == cut.calls.size(), "tool-call count depends on the pushes");
    for (std::size_t i = 0; i < whole.calls.size(); ++i) {
      check(whole.calls[i].name == cut.calls[i].name, "tool-call name depends on the pushes");
      check(whole.calls[i].arguments == cut.calls[i].arguments, "tool-call arguments depend on the pushes");
      if (f != tool_call_format::named_arguments)
        check(json::accept(whole.calls[i].arguments), "tool-call arguments are not JSON");
    }
  }
}

void reasoning(std::string_view text, std::size_t piece, bool starts_in_reasoning) {
  auto run = [&](std::size_t k) {
    reasoning_splitter s(starts_in_reasoning);
    reasoning_splitter::delta all;
    auto take = [&](reasoning_splitter::delta d) {
      all.reasoning += d.reasoning;
      all.content += d.content;
    };
    for (std::size_t i = 0; i < text.size(); i += k) take(s.push(text.substr(i, k)));
    take(s.flush());
    return all;
  };
  const auto whole = run(text.size() + 1), cut = run(piece);
  check(whole.reasoning == cut.reasoning && whole.content == cut.content, "reasoning split depends on the pushes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint8_t mode = data[0];
  const std::size_t piece = (data[1] & 0x1F) + 1;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (mode % 3) {
    case 0: requests(rest); break;
    case 1: tools(rest, piece); break;
    default: reasoning(rest, piece, mode & 0x80); break;
  }
  return 0;
}
