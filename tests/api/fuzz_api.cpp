// Fuzz target for the API layer's input handling: request bodies and the parsers of
// generated text. The first input byte picks the mode, the second a piece size; the rest is
// the data.
// - Request bodies: parse_json_body (UTF-8 check, JSON decode), classify_invocation, then
//   the chat, completion, LMI, Anthropic messages and Responses parsers whatever the
//   classification (a body may be valid for none). Each must return a value or an error and never throw or crash. The same
//   bytes go through the bounded JSON reader (parse_json) with the default caps and with
//   small caps chosen by the size byte: on success the tree is json::parse's and lies
//   within the caps (depth, values, members per object); a decode error means json::parse
//   refuses the text too; a cap error on a text json::parse accepts means its tree exceeds
//   that cap.
// - Tool calls (every format, through choice_text) and reasoning splitting, whose
//   contract is that the result does not depend on how the text is cut into pushes: the
//   text pushed whole and pushed in pieces of the given size must give the same content,
//   reasoning and calls; hermes and llama3_json calls carry arguments that parse as JSON.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/chat_request.hpp"
#include "api/completion_request.hpp"
#include "api/embedding_request.hpp"
#include "api/invocations.hpp"
#include "api/json_parse.hpp"
#include "api/choice_text.hpp"
#include "api/messages_request.hpp"
#include "api/responses_request.hpp"
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

struct tree_shape {
  std::size_t depth = 0, values = 0, max_members = 0;
};

// Measured without recursion (the tree may be as deep as the input is long).
tree_shape shape_of(const json& root) {
  tree_shape s;
  std::vector<std::pair<const json*, std::size_t>> todo{{&root, 0}};
  while (!todo.empty()) {
    auto [v, d] = todo.back();
    todo.pop_back();
    ++s.values;
    if (!v->is_structured()) continue;
    s.depth = std::max(s.depth, d + 1);
    if (v->is_object()) s.max_members = std::max(s.max_members, v->size());
    for (const auto& c : *v) todo.push_back({&c, d + 1});
  }
  return s;
}

// The shape of the text itself (values overwritten by a repeated key included), by SAX.
struct text_shape_counter {
  tree_shape s;
  std::vector<std::set<std::string>> keys;  // per open container (arrays: empty)
  bool value() {
    ++s.values;
    return true;
  }
  bool open() {
    ++s.values;
    keys.emplace_back();
    s.depth = std::max(s.depth, keys.size());
    return true;
  }
  bool close() {
    keys.pop_back();
    return true;
  }
  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const std::string&) { return value(); }
  bool string(std::string&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool start_object(std::size_t) { return open(); }
  bool start_array(std::size_t) { return open(); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    keys.back().insert(k);
    s.max_members = std::max(s.max_members, keys.back().size());
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }
};

tree_shape text_shape(std::string_view text) {
  text_shape_counter c;
  (void)json::sax_parse(text.begin(), text.end(), &c);
  return c.s;
}

bool within(const tree_shape& s, const json_limits& lim) {
  return s.depth <= lim.max_depth && s.values <= lim.max_values && s.max_members <= lim.max_members;
}

void bounded(std::string_view text, const json_limits& lim) {
  auto r = parse_json(text, lim);
  const bool accepted = json::accept(text);
  if (r) {
    check(accepted, "parse_json accepts a text json::parse refuses");
    check(within(shape_of(*r), lim) && within(text_shape(text), lim), "parse_json returned a tree over its caps");
    const json expected = json::parse(text);
    check(*r == expected && r->dump() == expected.dump(), "parse_json and json::parse differ");
    return;
  }
  check(r.error().code == vks::errc::invalid_argument, "parse_json failed with a code other than invalid_argument");
  if (r.error().message.rfind("JSON decode error: ", 0) == 0) {
    check(!accepted, "parse_json calls a text malformed that json::parse accepts");
  } else if (accepted) {
    check(!within(text_shape(text), lim), "parse_json refused a text within its caps");
  }
}

void bounded(std::string_view text, std::uint8_t knob) {
  bounded(text, default_json_limits);
  json_limits small;
  small.max_depth = 1 + (knob & 7);
  small.max_values = 1 + 3 * (knob >> 3);
  small.max_members = 1 + (knob & 3);
  bounded(text, small);
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
  (void)parse_messages_request(*j, lim);
  (void)parse_responses_request(*j, lim);
  (void)parse_embedding_request(*j, lim.n_vocab);
}

struct tool_result {
  std::string reasoning, content;
  std::vector<tool_call> calls;
  std::size_t n_warnings = 0;
};

tool_result run_tools(const choice_text_settings& st, std::string_view text, std::size_t piece) {
  choice_text p(st);
  tool_result r;
  auto take = [&](choice_text::delta d) {
    r.reasoning += d.reasoning;
    r.content += d.content;
    r.n_warnings += d.warnings.size();
    for (auto& c : d.calls) r.calls.push_back(std::move(c));
  };
  for (std::size_t i = 0; i < text.size(); i += piece) take(p.push(text.substr(i, piece)));
  take(p.flush());
  return r;
}

// Every format (#24), through the choice pipeline, with and without a <think> split.
void tools(std::string_view text, std::size_t piece, bool with_reasoning) {
  for (auto f : {tool_call_format::hermes, tool_call_format::llama3_json, tool_call_format::named_arguments,
                 tool_call_format::qwen3_xml, tool_call_format::glm, tool_call_format::deepseek, tool_call_format::kimi,
                 tool_call_format::mistral, tool_call_format::granite, tool_call_format::gemma4,
                 tool_call_format::pythonic, tool_call_format::harmony, tool_call_format::minimax,
                 tool_call_format::functionary_v3_1, tool_call_format::functionary_v3_2,
                 tool_call_format::seed_oss, tool_call_format::lfm2}) {
    choice_text_settings st;
    st.tool_calls = f;
    st.tool_name = "fn";
    st.reasoning = with_reasoning;
    const tool_result whole = run_tools(st, text, text.size() + 1), cut = run_tools(st, text, piece);
    check(whole.content == cut.content && whole.reasoning == cut.reasoning, "tool-call content depends on the pushes");
    check(whole.n_warnings == cut.n_warnings, "tool-call warnings depend on the pushes");
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
    case 0:
      requests(rest);
      bounded(rest, data[1]);
      break;
    case 1: tools(rest, piece, mode & 0x80); break;
    default: reasoning(rest, piece, mode & 0x80); break;
  }
  return 0;
}
