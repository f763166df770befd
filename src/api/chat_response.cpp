// Chat responses and chunk streams (chat_response.hpp).
#include "api/chat_response.hpp"

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

chat_accumulator::chat_accumulator(chat_output_settings s) : settings_(std::move(s)) {
  choices_.resize(static_cast<std::size_t>(settings_.n));
  for (auto& c : choices_) {
    if (settings_.reasoning) c.splitter.emplace(settings_.starts_in_reasoning, settings_.tags);
    if (settings_.tool_calls != tool_call_format::none) c.tools.emplace(settings_.tool_calls, settings_.tool_name);
  }
}

void chat_accumulator::add_content(choice_state& c, std::string_view text) {
  if (!c.tools) {
    c.content += text;
    return;
  }
  auto d = c.tools->push(text);
  c.content += d.content;
  for (auto& t : d.calls) c.calls.push_back(std::move(t));
}

void chat_accumulator::add_text(choice_state& c, std::string_view text) {
  if (!c.splitter) {
    add_content(c, text);
    return;
  }
  auto d = c.splitter->push(text);
  add_content(c, d.content);
  c.reasoning += d.reasoning;
}

void chat_accumulator::on_event(const engine::event& ev) {
  if (done()) return;
  if (const auto* t = std::get_if<engine::token_event>(&ev)) {
    if (t->seq < 0 || t->seq >= settings_.n) return;
    auto& c = choices_[static_cast<std::size_t>(t->seq)];
    add_text(c, t->text);
    if (settings_.logprobs) c.logprobs.insert(c.logprobs.end(), t->logprobs.begin(), t->logprobs.end());
    if (settings_.prompt_token_ids) c.ids.insert(c.ids.end(), t->tokens.begin(), t->tokens.end());
  } else if (const auto* f = std::get_if<engine::finished_event>(&ev)) {
    if (f->seq < 0 || f->seq >= settings_.n) return;
    auto& c = choices_[static_cast<std::size_t>(f->seq)];
    if (c.finished) return;
    add_text(c, f->text);
    if (settings_.logprobs) c.logprobs.insert(c.logprobs.end(), f->logprobs.begin(), f->logprobs.end());
    if (settings_.prompt_token_ids) c.ids.insert(c.ids.end(), f->tokens.begin(), f->tokens.end());
    if (c.splitter) {
      auto d = c.splitter->flush();
      add_content(c, d.content);
      c.reasoning += d.reasoning;
    }
    if (c.tools) {
      auto d = c.tools->flush();
      c.content += d.content;
      for (auto& call : d.calls) c.calls.push_back(std::move(call));
    }
    c.finished = true;
    c.finish = f->reason;
    c.stop = f->stop;
    usage_.prompt_tokens = f->seq_usage.n_prompt_tokens;
    usage_.cached_tokens = std::max(usage_.cached_tokens, f->seq_usage.n_cached_tokens);
    usage_.completion_tokens += f->seq_usage.n_completion_tokens;
    ++n_finished_;
  } else if (const auto* p = std::get_if<engine::prompt_logprobs_event>(&ev)) {
    prompt_logprobs_ = prompt_logprobs_json(*p);
  } else if (const auto* e = std::get_if<engine::error_event>(&ev)) {
    error_ = e->err;
  }
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
    c.finish_tool_calls = settings_.finish_tool_calls;
    c.finish = s.finish;
    c.stop = s.stop;
    if (settings_.logprobs) c.logprobs = s.logprobs;
    c.top_logprobs = settings_.top_logprobs;
    if (settings_.prompt_token_ids) c.token_ids = s.ids;
    out.push_back(std::move(c));
  }
  return chat_completion_json(meta, out, usage_, prompt_logprobs_, settings_.options, settings_.prompt_token_ids);
}

// ---- streaming ----------------------------------------------------------------------

chat_stream::chat_stream(response_meta meta, chat_stream_settings s) : meta_(std::move(meta)), settings_(std::move(s)) {
  choices_.resize(static_cast<std::size_t>(settings_.output.n));
  for (auto& c : choices_) {
    if (settings_.output.reasoning) c.splitter.emplace(settings_.output.starts_in_reasoning, settings_.output.tags);
    if (settings_.output.tool_calls != tool_call_format::none)
      c.tools.emplace(settings_.output.tool_calls, settings_.output.tool_name);
  }
  usage_.prompt_tokens = settings_.n_prompt_tokens;
}

void chat_stream::tool_call_chunks(int index, choice_state& c, const std::vector<tool_call>& calls,
                                   std::vector<std::string>& out) const {
  for (const auto& t : calls) {
    json call = tool_call_json(t);
    call["index"] = c.n_tool_calls++;
    json delta;
    delta["tool_calls"] = json::array({std::move(call)});
    out.push_back(chunk(index, std::move(delta), nullptr, nullptr, nullptr, c.n_completion_tokens));
  }
}

json chat_stream::take_ids(choice_state& c) const {
  if (!settings_.output.prompt_token_ids) return nullptr;
  json ids = c.pending_ids;
  c.pending_ids.clear();
  return ids;
}

json chat_stream::chunk_json(int index, json delta, const json& logprobs, const json& finish_reason,
                            const json& stop_reason, int n_completion_tokens, const json& token_ids) const {
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
    usage_totals u{usage_.prompt_tokens, n_completion_tokens, usage_.cached_tokens};
    j["usage"] = usage_json(u, settings_.output.options);
  }
  return j;
}

json chat_stream::delta_json(const reasoning_splitter::delta& d, bool force_content) const {
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
    json first = chunk_json(i, std::move(delta), nullptr, nullptr, nullptr, 0);
    if (settings_.output.prompt_token_ids) first["prompt_token_ids"] = *settings_.output.prompt_token_ids;  // vLLM: on every role chunk
    out.push_back(dump_json(first));
    if (settings_.echo && !settings_.echo->empty()) {
      json echo;
      echo["content"] = *settings_.echo;
      out.push_back(chunk(i, std::move(echo), nullptr, nullptr, nullptr, 0));
    }
  }
  return out;
}

std::vector<std::string> chat_stream::on_event(const engine::event& ev) {
  std::vector<std::string> out;
  if (done()) return out;
  const auto& o = settings_.output;
  // Reasoning split, then tool-call extraction from the content part; calls completed by
  // this text are appended to `calls`.
  auto split = [&](choice_state& c, std::string_view text, std::vector<tool_call>& calls) {
    reasoning_splitter::delta d;
    if (c.splitter) d = c.splitter->push(text);
    else d.content = text;
    if (!o.include_reasoning) d.reasoning.clear();
    if (c.tools) {
      auto t = c.tools->push(d.content);
      d.content = std::move(t.content);
      for (auto& x : t.calls) calls.push_back(std::move(x));
    }
    return d;
  };
  if (const auto* t = std::get_if<engine::token_event>(&ev)) {
    if (t->seq < 0 || t->seq >= o.n) return out;
    auto& c = choices_[static_cast<std::size_t>(t->seq)];
    if (c.finished) return out;
    c.n_completion_tokens = t->n_completion_tokens;
    if (o.prompt_token_ids) c.pending_ids.insert(c.pending_ids.end(), t->tokens.begin(), t->tokens.end());
    std::vector<tool_call> calls;
    auto d = split(c, t->text, calls);
    const bool lp = o.logprobs && !t->logprobs.empty();
    if (!d.empty() || lp)  // no empty chunks (e.g. text held back)
      out.push_back(chunk(t->seq, delta_json(d, true), lp ? chat_logprobs_json(t->logprobs, o.top_logprobs) : json(nullptr),
                          nullptr, nullptr, c.n_completion_tokens, take_ids(c)));
    tool_call_chunks(t->seq, c, calls, out);
  } else if (const auto* f = std::get_if<engine::finished_event>(&ev)) {
    if (f->seq < 0 || f->seq >= o.n) return out;
    auto& c = choices_[static_cast<std::size_t>(f->seq)];
    if (c.finished) return out;
    c.finished = true;
    ++n_finished_;
    c.n_completion_tokens = f->seq_usage.n_completion_tokens;
    usage_.prompt_tokens = f->seq_usage.n_prompt_tokens;
    usage_.cached_tokens = std::max(usage_.cached_tokens, f->seq_usage.n_cached_tokens);
    usage_.completion_tokens += f->seq_usage.n_completion_tokens;
    if (f->reason == engine::finish_reason::abort) return out;
    if (o.prompt_token_ids) c.pending_ids.insert(c.pending_ids.end(), f->tokens.begin(), f->tokens.end());
    std::vector<tool_call> calls;
    auto d = split(c, f->text, calls);
    if (c.splitter) {
      auto rest = c.splitter->flush();
      if (c.tools) {
        auto tc = c.tools->push(rest.content);
        rest.content = std::move(tc.content);
        for (auto& x : tc.calls) calls.push_back(std::move(x));
      }
      d.content += rest.content;
      if (o.include_reasoning) d.reasoning += rest.reasoning;
    }
    if (c.tools) {
      auto tc = c.tools->flush();
      d.content += tc.content;
      for (auto& x : tc.calls) calls.push_back(std::move(x));
    }
    const bool lp = o.logprobs && !f->logprobs.empty();
    json finish = engine::to_string(f->reason);
    if (!calls.empty() || c.n_tool_calls > 0) {
      // Text and calls first, then a finish chunk of its own (no content chunk follows a
      // call's delta in the same chunk).
      if (!d.empty() || lp)
        out.push_back(chunk(f->seq, delta_json(d, true), lp ? chat_logprobs_json(f->logprobs, o.top_logprobs) : json(nullptr),
                            nullptr, nullptr, c.n_completion_tokens, take_ids(c)));
      tool_call_chunks(f->seq, c, calls, out);
      if (o.finish_tool_calls && f->reason == engine::finish_reason::stop) finish = "tool_calls";
      out.push_back(chunk(f->seq, json::object(), nullptr, finish, stop_reason_json(f->stop), c.n_completion_tokens,
                          take_ids(c)));
      return out;
    }
    out.push_back(chunk(f->seq, delta_json(d, true), lp ? chat_logprobs_json(f->logprobs, o.top_logprobs) : json(nullptr),
                        finish, stop_reason_json(f->stop), c.n_completion_tokens, take_ids(c)));
  } else if (const auto* e = std::get_if<engine::error_event>(&ev)) {
    failed_ = true;
    out.push_back(dump_json(error_object(e->err)));
  }
  return out;
}

std::vector<std::string> chat_stream::finish() {
  std::vector<std::string> out;
  if (failed_ || !settings_.include_usage) return out;
  json j;
  j["id"] = meta_.id;
  j["object"] = "chat.completion.chunk";
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  j["choices"] = json::array();
  j["usage"] = usage_json(usage_, settings_.output.options);
  out.push_back(dump_json(j));
  return out;
}

}  // namespace vks::api
