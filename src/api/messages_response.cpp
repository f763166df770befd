// Anthropic Messages responses and event streams (messages_response.hpp).
#include "api/messages_response.hpp"

#include <type_traits>

#include "api/errors.hpp"

namespace vks::api {
namespace {

const char* kind_name(content_blocks::kind k) {
  switch (k) {
    case content_blocks::kind::thinking: return "thinking";
    case content_blocks::kind::text: return "text";
    case content_blocks::kind::tool_use: return "tool_use";
  }
  return "text";
}

}  // namespace

std::string_view anthropic_error_type(int status) noexcept {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    case 504: return "timeout_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

json anthropic_error_object(int status, std::string_view message) {
  json inner;
  inner["type"] = anthropic_error_type(status);
  inner["message"] = message;
  json j;
  j["type"] = "error";
  j["error"] = std::move(inner);
  return j;
}

json anthropic_error_object(const vks::error& e) {
  std::string message = e.message;
  if (!e.param.empty() && message.find(e.param) == std::string::npos) message = e.param + ": " + message;
  return anthropic_error_object(http_status(e.code), message);
}

json anthropic_usage_json(const usage_totals& u) {
  json j;
  j["input_tokens"] = u.prompt_tokens - u.cached_tokens;
  j["cache_creation_input_tokens"] = 0;
  j["cache_read_input_tokens"] = u.cached_tokens;
  j["output_tokens"] = u.completion_tokens;
  return j;
}

std::string anthropic_stop_reason(const engine::finished_event& f, bool tool_use) {
  if (tool_use) return "tool_use";
  if (f.reason == engine::finish_reason::length) return "max_tokens";
  if (std::holds_alternative<std::string>(f.stop)) return "stop_sequence";
  return "end_turn";
}

// ---- non-streaming -----------------------------------------------------------------------

messages_accumulator::messages_accumulator(messages_output_settings s)
    : settings_(std::move(s)), blocks_(settings_.text), tracker_(1, 1) {}

void messages_accumulator::apply(const std::vector<content_blocks::op>& ops) {
  using what = content_blocks::op::what;
  for (const auto& o : ops) {
    if (o.w == what::start) {
      json b;
      b["type"] = kind_name(o.k);
      if (o.k == content_blocks::kind::thinking) {
        b["thinking"] = "";
        b["signature"] = "";
      } else if (o.k == content_blocks::kind::text) {
        b["text"] = "";
      } else {
        b["id"] = "toolu_" + o.id;
        b["name"] = o.name;
        b["input"] = json::object();
      }
      content_.push_back(std::move(b));
    } else if (o.w == what::delta) {
      json& b = content_[static_cast<std::size_t>(o.index)];
      if (o.k == content_blocks::kind::thinking) b["thinking"].get_ref<std::string&>() += o.text;
      else if (o.k == content_blocks::kind::text) b["text"].get_ref<std::string&>() += o.text;
      else b["input"] = tool_input_object(o.text);
    }
  }
}

void messages_accumulator::on_event(const engine::event& ev) {
  route_event(tracker_, 0, ev,
              overloaded{[&](int, const engine::token_event& t) {
                           std::vector<content_blocks::op> ops;
                           blocks_.push(t.text, ops);
                           apply(ops);
                         },
                         [&](int, const engine::finished_event& f) {
                           std::vector<content_blocks::op> ops;
                           blocks_.push(f.text, ops);
                           blocks_.finish(ops);
                           apply(ops);
                           stop_reason_ = anthropic_stop_reason(f, blocks_.any_tool_use());
                           if (const auto* s = std::get_if<std::string>(&f.stop); s && stop_reason_ == "stop_sequence")
                             stop_sequence_ = *s;
                         },
                         [](int, const engine::prompt_logprobs_event&) {}, [](const engine::error_event&) {}});
}

json messages_accumulator::build(const response_meta& meta) const {
  json j;
  j["id"] = meta.id;
  j["type"] = "message";
  j["role"] = "assistant";
  j["model"] = meta.model;
  j["content"] = content_;
  j["stop_reason"] = stop_reason_;
  j["stop_sequence"] = stop_sequence_;
  j["usage"] = anthropic_usage_json(tracker_.usage());
  return j;
}

// ---- streaming ---------------------------------------------------------------------------

messages_stream::messages_stream(response_meta meta, messages_output_settings s)
    : meta_(std::move(meta)), settings_(std::move(s)), blocks_(settings_.text), tracker_(1, 1) {}

std::vector<std::string> messages_stream::start() {
  json msg;
  msg["id"] = meta_.id;
  msg["type"] = "message";
  msg["role"] = "assistant";
  msg["model"] = meta_.model;
  msg["content"] = json::array();
  msg["stop_reason"] = nullptr;
  msg["stop_sequence"] = nullptr;
  usage_totals u;
  u.prompt_tokens = settings_.n_prompt_tokens;
  msg["usage"] = anthropic_usage_json(u);
  json ev;
  ev["type"] = "message_start";
  ev["message"] = std::move(msg);
  return {dump_json(ev), R"({"type":"ping"})"};
}

void messages_stream::render(const std::vector<content_blocks::op>& ops, std::vector<std::string>& out) const {
  using what = content_blocks::op::what;
  using kind = content_blocks::kind;
  for (const auto& o : ops) {
    json ev;
    if (o.w == what::start) {
      ev["type"] = "content_block_start";
      ev["index"] = o.index;
      json b;
      b["type"] = kind_name(o.k);
      if (o.k == kind::thinking) {
        b["thinking"] = "";
        b["signature"] = "";
      } else if (o.k == kind::text) {
        b["text"] = "";
      } else {
        b["id"] = "toolu_" + o.id;
        b["name"] = o.name;
        b["input"] = json::object();
      }
      ev["content_block"] = std::move(b);
    } else if (o.w == what::delta) {
      ev["type"] = "content_block_delta";
      ev["index"] = o.index;
      json d;
      if (o.k == kind::thinking) {
        d["type"] = "thinking_delta";
        d["thinking"] = o.text;
      } else if (o.k == kind::text) {
        d["type"] = "text_delta";
        d["text"] = o.text;
      } else {
        d["type"] = "input_json_delta";
        d["partial_json"] = o.text;
      }
      ev["delta"] = std::move(d);
    } else {
      ev["type"] = "content_block_stop";
      ev["index"] = o.index;
    }
    out.push_back(dump_json(ev));
  }
}

void messages_stream::on_finished(const engine::finished_event& f, std::vector<std::string>& out) {
  std::vector<content_blocks::op> ops;
  blocks_.push(f.text, ops);
  blocks_.finish(ops);
  render(ops, out);
  json delta;
  const std::string reason = anthropic_stop_reason(f, blocks_.any_tool_use());
  delta["stop_reason"] = reason;
  const auto* s = std::get_if<std::string>(&f.stop);
  delta["stop_sequence"] = s && reason == "stop_sequence" ? json(*s) : json(nullptr);
  json ev;
  ev["type"] = "message_delta";
  ev["delta"] = std::move(delta);
  ev["usage"] = anthropic_usage_json(tracker_.usage());
  out.push_back(dump_json(ev));
  out.push_back(R"({"type":"message_stop"})");
}

std::vector<std::string> messages_stream::on_event(const engine::event& ev) {
  std::vector<std::string> out;
  route_event(tracker_, 0, ev,
              overloaded{[&](int, const engine::token_event& t) {
                           std::vector<content_blocks::op> ops;
                           blocks_.push(t.text, ops);
                           render(ops, out);
                         },
                         [&](int, const engine::finished_event& f) { on_finished(f, out); },
                         [](int, const engine::prompt_logprobs_event&) {},
                         [&](const engine::error_event& e) { out.push_back(dump_json(anthropic_error_object(e.err))); }});
  return out;
}

}  // namespace vks::api
