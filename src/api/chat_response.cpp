// Chat responses and chunk streams (chat_response.hpp).
#include "api/chat_response.hpp"

#include <type_traits>

#include "api/errors.hpp"

namespace vks::api {

namespace {

void put_reasoning(json& obj, const json& value, reasoning_keys keys) {
  if (keys != reasoning_keys::reasoning) obj["reasoning_content"] = value;
  if (keys != reasoning_keys::reasoning_content) obj["reasoning"] = value;
}

json tool_call_json(const tool_call& t) {
  json f;
  f["name"] = t.name;
  f["arguments"] = t.arguments;
  json j;
  j["id"] = t.id;
  j["type"] = "function";
  j["function"] = std::move(f);
  return j;
}

}  // namespace

json chat_message_json(const chat_choice& c, const output_options& opt) {
  json m;
  m["role"] = c.role;
  m["content"] = c.content ? json(*c.content) : json(nullptr);
  m["refusal"] = nullptr;
  m["annotations"] = nullptr;
  m["audio"] = nullptr;
  m["function_call"] = nullptr;
  m["tool_calls"] = json::array();
  for (const auto& t : c.tool_calls) m["tool_calls"].push_back(tool_call_json(t));
  if (c.reasoning_enabled) put_reasoning(m, c.reasoning ? json(*c.reasoning) : json(nullptr), opt.keys);
  return m;
}

json chat_completion_json(const response_meta& meta, std::span<const chat_choice> choices,
                          const usage_totals& usage, const json& prompt_logprobs,
                          const output_options& opt, const std::optional<token_id_list>& prompt_token_ids) {
  json j;
  j["id"] = meta.id;
  j["object"] = "chat.completion";
  j["created"] = meta.created;
  j["model"] = meta.model;
  json arr = json::array();
  for (const auto& c : choices) {
    json choice;
    choice["index"] = c.index;
    choice["message"] = chat_message_json(c, opt);
    choice["logprobs"] = c.logprobs ? chat_logprobs_json(*c.logprobs, c.top_logprobs) : json(nullptr);
    const bool by_tools = !c.tool_calls.empty() && c.finish_tool_calls && c.finish == engine::finish_reason::stop;
    choice["finish_reason"] = by_tools ? "tool_calls" : engine::to_string(c.finish);
    choice["stop_reason"] = stop_reason_json(c.stop);
    if (c.token_ids) choice["token_ids"] = *c.token_ids;
    if (!c.warnings.empty()) choice["warnings"] = c.warnings;
    arr.push_back(std::move(choice));
  }
  j["choices"] = std::move(arr);
  j["service_tier"] = nullptr;
  j["system_fingerprint"] = nullptr;
  j["usage"] = usage_json(usage, opt);
  j["prompt_logprobs"] = prompt_logprobs;
  if (prompt_token_ids) j["prompt_token_ids"] = *prompt_token_ids;
  j["kv_transfer_params"] = nullptr;
  return j;
}

// ---- non-streaming ----------------------------------------------------------------

chat_accumulator::chat_accumulator(chat_output_settings s) : settings_(std::move(s)), tracker_(1, settings_.n) {
  choices_.reserve(static_cast<std::size_t>(settings_.n));
  for (int i = 0; i < settings_.n; ++i) choices_.emplace_back(settings_.text_settings());
}

template <class E>
void chat_accumulator::add_piece(choice_state& c, const E& piece) {
  auto d = c.text.push(piece.text);
  if constexpr (std::is_same_v<E, engine::finished_event>) {
    d.append(c.text.flush());
    c.finish = piece.reason;
    c.stop = piece.stop;
  }
  c.content += d.content;
  c.reasoning += d.reasoning;
  for (auto& t : d.calls) c.calls.push_back(std::move(t));
  for (auto& w : d.warnings) c.warnings.push_back(std::move(w));
  if (settings_.logprobs) c.logprobs.insert(c.logprobs.end(), piece.logprobs.begin(), piece.logprobs.end());
  if (settings_.prompt_token_ids) c.ids.insert(c.ids.end(), piece.tokens.begin(), piece.tokens.end());
}

void chat_accumulator::on_event(const engine::event& ev) {
  route_event(tracker_, 0, ev,
              overloaded{[&](int i, const auto& piece) { add_piece(choices_[static_cast<std::size_t>(i)], piece); },
                         [&](int, const engine::prompt_logprobs_event& p) { prompt_logprobs_ = prompt_logprobs_json(p); },
                         [](const engine::error_event&) {}});
}

json chat_accumulator::build(const response_meta& meta) const {
  std::vector<chat_choice> out;
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    const auto& s = choices_[i];
    chat_choice c;
    c.index = static_cast<int>(i);
    c.role = settings_.role;
    c.reasoning_enabled = settings_.reasoning;
    if (settings_.reasoning) {
      if (!s.content.empty()) c.content = s.content;
      else c.content.reset();  // vLLM: null content when everything was reasoning
      if (settings_.include_reasoning && !s.reasoning.empty()) c.reasoning = s.reasoning;
    } else {
      c.content = s.content;
    }
    if (!s.calls.empty() && s.content.find_first_not_of(" \t\r\n") == std::string::npos)
      c.content.reset();  // only calls (and whitespace around the blocks): null content, as vLLM
    c.tool_calls = s.calls;
    c.warnings = s.warnings;
    c.finish_tool_calls = settings_.finish_tool_calls;
    c.finish = s.finish;
    c.stop = s.stop;
    if (settings_.logprobs) c.logprobs = s.logprobs;
    c.top_logprobs = settings_.top_logprobs;
    if (settings_.prompt_token_ids) c.token_ids = s.ids;
    out.push_back(std::move(c));
  }
  return chat_completion_json(meta, out, tracker_.usage(), prompt_logprobs_, settings_.options, settings_.prompt_token_ids);
}

// ---- streaming ----------------------------------------------------------------------

chat_stream::chat_stream(response_meta meta, chat_stream_settings s)
    : meta_(std::move(meta)), settings_(std::move(s)), tracker_(1, settings_.output.n) {
  choices_.reserve(static_cast<std::size_t>(settings_.output.n));
  for (int i = 0; i < settings_.output.n; ++i) choices_.emplace_back(settings_.output.text_settings());
}

void chat_stream::tool_call_chunks(int index, choice_state& c, const std::vector<tool_call>& calls,
                                   std::vector<std::string>& out) const {
  for (const auto& t : calls) {
    json call = tool_call_json(t);
    call["index"] = c.n_tool_calls++;
    json delta;
    delta["tool_calls"] = json::array({std::move(call)});
    out.push_back(chunk(index, std::move(delta), nullptr, nullptr, nullptr));
  }
}

void chat_stream::warning_chunk(int index, const std::vector<std::string>& warnings,
                                std::vector<std::string>& out) const {
  if (warnings.empty()) return;
  json j = chunk_json(index, json::object(), nullptr, nullptr, nullptr);
  j["choices"][0]["warnings"] = warnings;
  out.push_back(dump_json(j));
}

json chat_stream::take_ids(choice_state& c) const {
  if (!settings_.output.prompt_token_ids) return nullptr;
  json ids = c.pending_ids;
  c.pending_ids.clear();
  return ids;
}

json chat_stream::chunk_json(int index, json delta, const json& logprobs, const json& finish_reason,
                            const json& stop_reason, const json& token_ids) const {
  json j;
  j["id"] = meta_.id;
  j["object"] = "chat.completion.chunk";
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  json choice;
  choice["index"] = index;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = logprobs;
  choice["finish_reason"] = finish_reason;
  choice["stop_reason"] = stop_reason;
  if (!token_ids.is_null()) choice["token_ids"] = token_ids;
  j["choices"] = json::array({std::move(choice)});
  if (settings_.include_usage && settings_.continuous_usage_stats) {
    // Before the first finish the prompt's size comes from the settings.
    usage_totals u = tracker_.usage();
    if (!tracker_.any_finished()) u.prompt_tokens = settings_.n_prompt_tokens;
    u.completion_tokens = tracker_.n_completion_tokens(index);
    j["usage"] = usage_json(u, settings_.output.options);
  }
  return j;
}

json chat_stream::delta_json(const choice_text::delta& d, bool force_content) const {
  json delta = json::object();
  if (!d.reasoning.empty() && settings_.output.include_reasoning)
    put_reasoning(delta, d.reasoning, settings_.output.options.keys);
  if (!d.content.empty() || (force_content && delta.empty())) delta["content"] = d.content;
  return delta;
}

std::vector<std::string> chat_stream::start() {
  std::vector<std::string> out;
  for (int i = 0; i < settings_.output.n; ++i) {
    json delta;
    delta["role"] = settings_.output.role;
    delta["content"] = "";
    json first = chunk_json(i, std::move(delta), nullptr, nullptr, nullptr);
    if (settings_.output.prompt_token_ids) first["prompt_token_ids"] = *settings_.output.prompt_token_ids;  // vLLM: on every role chunk
    out.push_back(dump_json(first));
    if (settings_.echo && !settings_.echo->empty()) {
      json echo;
      echo["content"] = *settings_.echo;
      out.push_back(chunk(i, std::move(echo), nullptr, nullptr, nullptr));
    }
  }
  return out;
}

template <class E>
choice_text::delta chat_stream::take_piece(choice_state& c, const E& piece) const {
  if (settings_.output.prompt_token_ids) c.pending_ids.insert(c.pending_ids.end(), piece.tokens.begin(), piece.tokens.end());
  auto d = c.text.push(piece.text);
  if constexpr (std::is_same_v<E, engine::finished_event>) d.append(c.text.flush());
  if (!settings_.output.include_reasoning) d.reasoning.clear();  // no chunk for dropped reasoning
  return d;
}

void chat_stream::on_finished(int index, const engine::finished_event& f, std::vector<std::string>& out) {
  if (f.reason == engine::finish_reason::abort) return;
  const auto& o = settings_.output;
  auto& c = choices_[static_cast<std::size_t>(index)];
  auto d = take_piece(c, f);
  const bool lp = o.logprobs && !f.logprobs.empty();
  json logprobs = lp ? chat_logprobs_json(f.logprobs, o.top_logprobs) : json(nullptr);
  json finish = engine::to_string(f.reason);
  if (d.calls.empty() && c.n_tool_calls == 0 && d.warnings.empty()) {
    out.push_back(chunk(index, delta_json(d, true), logprobs, finish, stop_reason_json(f.stop), take_ids(c)));
    return;
  }
  // Text and calls first, then a finish chunk of its own (no content chunk follows a
  // call's delta in the same chunk).
  if (!d.reasoning.empty() || !d.content.empty() || lp)
    out.push_back(chunk(index, delta_json(d, true), logprobs, nullptr, nullptr, take_ids(c)));
  warning_chunk(index, d.warnings, out);
  tool_call_chunks(index, c, d.calls, out);
  if (o.finish_tool_calls && f.reason == engine::finish_reason::stop && c.n_tool_calls > 0) finish = "tool_calls";
  out.push_back(chunk(index, json::object(), nullptr, finish, stop_reason_json(f.stop), take_ids(c)));
}

std::vector<std::string> chat_stream::on_event(const engine::event& ev) {
  std::vector<std::string> out;
  const auto& o = settings_.output;
  route_event(tracker_, 0, ev,
              overloaded{[&](int i, const engine::token_event& t) {
                           auto& c = choices_[static_cast<std::size_t>(i)];
                           auto d = take_piece(c, t);
                           const bool lp = o.logprobs && !t.logprobs.empty();
                           if (!d.reasoning.empty() || !d.content.empty() || lp)  // no empty chunks (text held back)
                             out.push_back(chunk(i, delta_json(d, true),
                                                 lp ? chat_logprobs_json(t.logprobs, o.top_logprobs) : json(nullptr),
                                                 nullptr, nullptr, take_ids(c)));
                           warning_chunk(i, d.warnings, out);
                           tool_call_chunks(i, c, d.calls, out);
                         },
                         [&](int i, const engine::finished_event& f) { on_finished(i, f, out); },
                         [](int, const engine::prompt_logprobs_event&) {},
                         [&](const engine::error_event& e) { out.push_back(dump_json(error_object(e.err))); }});
  return out;
}

std::vector<std::string> chat_stream::finish() {
  std::vector<std::string> out;
  if (tracker_.error() || !settings_.include_usage) return out;
  json j;
  j["id"] = meta_.id;
  j["object"] = "chat.completion.chunk";
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  j["choices"] = json::array();
  j["usage"] = usage_json(tracker_.usage(), settings_.output.options);
  out.push_back(dump_json(j));
  return out;
}

}  // namespace vks::api
