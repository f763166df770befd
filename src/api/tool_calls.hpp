// Extracts tool calls from generated content in the formats chat templates teach models
// (the grammar of each body is in tool_call_syntax.hpp; harmony, which also carries
// reasoning, is harmony.hpp). Arguments come out as compact JSON text.
//
// Block formats: a start tag opens a call block, an end tag (or, for formats without one,
// the end of the text) closes it, and the body between is parsed by the format's syntax:
//   hermes     <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//   qwen3_xml  <tool_call><function=f><parameter=p>v</parameter></function></tool_call>
//   glm        <tool_call>f<arg_key>p</arg_key><arg_value>v</arg_value></tool_call>
//   deepseek   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>...<｜tool▁calls▁end｜> (V3, R1, V3.1)
//   kimi       <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{...}
//              <|tool_call_end|><|tool_calls_section_end|> (the id is the model's)
//   mistral    [TOOL_CALLS][{...}] (v3), [TOOL_CALLS]f[ARGS]{...} (v11), f[CALL_ID]id[ARGS]{...}
//              (v13), to the end of the text; ids are 9 alphanumerics as Mistral's templates demand
//   granite    <|tool_call|>[{"name": ..., "arguments": {...}}] to the end of the text
//   gemma4     <|tool_call>call:f{p:<|"|>v<|"|>}<tool_call|>
//   minimax    <minimax:tool_call><invoke name="f"><parameter name="p">v</parameter></invoke></minimax:tool_call>
//   functionary_v3_1  <function=f>{...}</function> (Functionary v3.1 on Llama 3.1)
//   seed_oss   <seed:tool_call><function=f><parameter=p>v</parameter></function></seed:tool_call>
//              (ByteDance Seed-OSS: Qwen3 XML's body between its own tags)
//   lfm2       <|tool_call_start|>[f(a=1, b="x")]<|tool_call_end|> (Liquid LFM2/LFM2.5: a
//              pythonic call list between control tokens)
// - text outside blocks is content; text that may be the beginning of a start tag is held
//   back until decided;
// - fail closed: a block whose body is not a call, names a function that was not offered,
//   or is a second call when parallel calls are off, stays in content whole (tags included)
//   and adds a warning; a block still open when the text ends is judged the same way
//   (models often stop at end-of-turn right after the arguments), so a truncated call is
//   content plus a warning, never a half call.
// Whole-reply formats: a reply whose first non-blank text opens the form is held back whole
// and judged at the end (calls, or content plus a warning); any other reply streams as
// content:
//   llama3_json  {"name": f, "parameters": {...}} (several separated by ";", or a list)
//   pythonic     [f(a=1, b="x"), g()] (Llama 4, Phi-4-mini; <|python_start|> wrapper allowed)
// Recipient messages (functionary_v3_2): the reply is a sequence of messages
// ">>>recipient\nbody", the first one's ">>>" ending the prompt (a reply that starts with
// ">>>" is taken too). Recipient "all": the body is content, streamed; a function name: the
// body is its JSON arguments (python: code, {"code": ...} when not JSON), held until the
// next ">>>" outside a JSON string or the end, then judged like a block. A first line that
// is not a recipient makes that message plain content.
// named_arguments (a named tool_choice, whose output the grammar holds to the function's
// parameters schema): the whole reply is held back and becomes one call of that function.
//
// All are identical for streaming and non-streaming: the result never depends on how the
// text is cut into pushes. Not thread-safe; one per choice.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/json.hpp"

namespace vks::api {

enum class tool_call_format {
  none, hermes, llama3_json, named_arguments,
  // appended (#24)
  qwen3_xml, glm, deepseek, kimi, mistral, granite, gemma4, pythonic, harmony, minimax,
  functionary_v3_1, functionary_v3_2,
  // appended (#24, h24c)
  seed_oss, lfm2,
};

// The format a chat template teaches (none when it shows none we know). The rules, most
// specific first, are listed by tool_format_rules() (docs/serving.md has them as a table).
tool_call_format tool_call_format_of_template(std::string_view source);
struct tool_format_rule {
  tool_call_format format;
  std::string_view marker;  // the template contains this text
};
const std::vector<tool_format_rule>& tool_format_rules();
// Names for forcing a parser (--tool-call-parser): "hermes", "qwen3_xml", ...; nullopt
// when unknown. to_string gives the same names.
std::optional<tool_call_format> tool_call_format_from_name(std::string_view name);
std::string_view to_string(tool_call_format f);
// The format's markers are control tokens in its models' vocabularies: the reply must be
// decoded with them (skip_special_tokens false) to be parsed.
bool tool_format_needs_special_tokens(tool_call_format f);

// History for templates that write a call's arguments as text (Functionary v3.2 concatenates
// them to a string; chat requests normalise them to objects): the messages with every
// tool call's object arguments as compact JSON text. Other messages are unchanged.
bool template_takes_text_arguments(tool_call_format f);
json text_arguments_history(const json& messages);

struct tool_call {
  std::string id;         // the model's own when the format carries one, else "chatcmpl-tool-<32 hex>"
  std::string name;
  std::string arguments;  // JSON text
};

// The functions a request offered: names, and each one's parameters schema (used to type
// parameter values in the XML-like formats). Immutable once built; shared by the choices.
struct tool_catalog {
  std::map<std::string, json, std::less<>> parameters;  // name -> parameters schema (may be null)
  // From a request's "tools" list (entries without a function name are skipped).
  static tool_catalog from_tools(const json& tools);
  bool offers(std::string_view name) const { return parameters.find(name) != parameters.end(); }
  // The schema of parameter `param` of `fn`, or nullptr.
  const json* parameter_schema(std::string_view fn, std::string_view param) const;
};

struct tool_parse_options {
  std::shared_ptr<const tool_catalog> tools;  // null: any name is accepted
  bool parallel = true;                       // false: calls after the first stay content
  bool warn = true;                           // false: fail closed without warnings (reasoning text)
};

class tool_call_parser {
 public:
  // name: the function of named_arguments (unused by the other formats).
  explicit tool_call_parser(tool_call_format f = tool_call_format::hermes, std::string name = {},
                            tool_parse_options opts = {})
      : format_(f), name_(std::move(name)), opts_(std::move(opts)) {}

  struct delta {
    std::string content;
    std::vector<tool_call> calls;
    std::vector<std::string> warnings;  // one per block kept as content (fail closed)
    bool empty() const noexcept { return content.empty() && calls.empty() && warnings.empty(); }
  };
  // The content and calls completed by `text`. Within one delta, content and calls are
  // reported apart (content text that followed a call in the same push comes out in
  // `content` too); concatenating every delta's content gives the same text either way.
  delta push(std::string_view text);
  // The rest at the end of the text: held-back text, or the open block judged as above.
  delta flush();

 private:
  delta push_blocks(std::string_view text);
  delta push_whole_reply(std::string_view text);
  delta push_recipients(std::string_view text);  // functionary_v3_2 (functionary.cpp)
  delta flush_recipients();
  void judge_recipient(std::string_view body, bool at_end, delta& d);
  // Judges one block: calls, or `raw` back into content with a warning.
  void judge(std::string_view body, std::string_view raw, bool at_end, delta& d);
  bool accept(std::vector<tool_call>& calls, std::string& why);

  tool_call_format format_;
  std::string name_;
  tool_parse_options opts_;
  int n_calls_ = 0;          // calls emitted so far (parallel_tool_calls false keeps one)
  bool in_call_ = false;     // blocks: inside a block; whole reply: the reply opened the form
  bool decided_ = false;     // whole reply: the first non-blank character was seen
  std::string pending_;      // text held back (partial tag, block body, or the whole reply)
  // Recipient messages: what the current message is, and the scan of its JSON body.
  enum class message_part { head, content, args };
  message_part part_ = message_part::head;
  bool explicit_open_ = false;  // the message's ">>>" is in the reply (not the prompt's)
  std::string recipient_;
  std::size_t scan_ = 0;        // args: bytes of pending_ scanned for the closing ">>>"
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
};

}  // namespace vks::api
