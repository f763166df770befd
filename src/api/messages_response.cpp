// Anthropic Messages responses and event streams (messages_response.hpp).
#include "api/messages_response.hpp"

#include <type_traits>

#include "api/errors.hpp"
#include "api/json_parse.hpp"

namespace vks::api {
namespace {

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

const char* kind_name(message_blocks::kind k) {
  switch (k) {
    case message_blocks::kind::thinking: return "thinking";
    case message_blocks::kind::text: return "text";
    case message_blocks::kind::tool_use: return "tool_use";
  }
  return "text";
}

// The arguments as the tool_use input object ({} when they are not an object).
json tool_input(std::string_view arguments) {
  json a = parse_json_or_discarded(arguments);
  return a.is_object() ? a : json::object();
}

// Length of the UTF-8 character starting at s[0] (1 for a stray byte).
std::size_t char_len(std::string_view s) {
  const auto c = static_cast<unsigned char>(s[0]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  return std::min(n, s.size());
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

// ---- blocks ---------------------------------------------------------------------------

void message_blocks::close(std::vector<op>& out) {
  if (!open_) return;
  out.push_back({op::what::stop, n_blocks_ - 1, *open_, {}, {}, {}});
  open_.reset();
}

void message_blocks::add(kind k, std::string_view text, std::vector<op>& out) {
  if (text.empty()) return;
  if (k == kind::text && open_ != kind::text) {
    if (blank(text)) {  // wait: a text block starts at non-blank text
      blank_ += text;
      return;
    }
    std::string joined = std::move(blank_) + std::string(text);
    blank_.clear();
    close(out);
    open_ = kind::text;
    out.push_back({op::what::start, n_blocks_++, kind::text, {}, {}, {}});
    out.push_back({op::what::delta, n_blocks_ - 1, kind::text, std::move(joined), {}, {}});
    return;
  }
  blank_.clear();
  if (open_ != k) {
    close(out);
    open_ = k;
    out.push_back({op::what::start, n_blocks_++, k, {}, {}, {}});
  }
  out.push_back({op::what::delta, n_blocks_ - 1, k, std::string(text), {}, {}});
}

void message_blocks::add_call(const tool_call& c, std::vector<op>& out) {
  blank_.clear();
  close(out);
  any_tool_use_ = true;
  const int index = n_blocks_++;
  out.push_back({op::what::start, index, kind::tool_use, {}, "toolu_" + random_uuid_hex().substr(0, 24), c.name});
  out.push_back({op::what::delta, index, kind::tool_use, dump_json(tool_input(c.arguments)), {}, {}});
  out.push_back({op::what::stop, index, kind::tool_use, {}, {}, {}});
}

void message_blocks::apply(choice_text::delta d, std::vector<op>& out) {
  add(kind::thinking, d.reasoning, out);
  add(kind::text, d.content, out);
  for (const auto& c : d.calls) add_call(c, out);
}

void message_blocks::push(std::string_view piece, std::vector<op>& out) {
  if (!tools_) return apply(text_.push(piece), out);
  choice_text before = text_;  // to replay a piece that mixes text and calls
  auto d = text_.push(piece);
  if (d.calls.empty() || d.content.empty() || piece.size() <= 1) return apply(std::move(d), out);
  text_ = std::move(before);
  while (!piece.empty()) {
    const std::size_t n = char_len(piece);
    apply(text_.push(piece.substr(0, n)), out);
    piece.remove_prefix(n);
  }
}

void message_blocks::finish(std::vector<op>& out) {
  apply(text_.flush(), out);
  blank_.clear();
  close(out);
}

// ---- non-streaming -----------------------------------------------------------------------

messages_accumulator::messages_accumulator(messages_output_settings s)
    : settings_(std::move(s)), blocks_(settings_.text), tracker_(1, 1) {}

void messages_accumulator::apply(const std::vector<message_blocks::op>& ops) {
  using what = message_blocks::op::what;
  for (const auto& o : ops) {
    if (o.w == what::start) {
      json b;
      b["type"] = kind_name(o.k);
      if (o.k == message_blocks::kind::thinking) {
        b["thinking"] = "";
        b["signature"] = "";
      } else if (o.k == message_blocks::kind::text) {
        b["text"] = "";
      } else {
        b["id"] = o.id;
        b["name"] = o.name;
        b["input"] = json::object();
      }
      content_.push_back(std::move(b));
    } else if (o.w == what::delta) {
      json& b = content_[static_cast<std::size_t>(o.index)];
      if (o.k == message_blocks::kind::thinking) b["thinking"].get_ref<std::string&>() += o.text;
      else if (o.k == message_blocks::kind::text) b["text"].get_ref<std::string&>() += o.text;
      else b["input"] = tool_input(o.text);
    }
  }
}

void messages_accumulator::on_event(const engine::event& ev) {
  route_event(tracker_, 0, ev,
              overloaded{[&](int, const engine::token_event& t) {
                           std::vector<message_blocks::op> ops;
                           blocks_.push(t.text, ops);
                           apply(ops);
                         },
                         [&](int, const engine::finished_event& f) {
                           std::vector<message_blocks::op> ops;
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

void messages_stream::render(const std::vector<message_blocks::op>& ops, std::vector<std::string>& out) const {
  using what = message_blocks::op::what;
  using kind = message_blocks::kind;
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
        b["id"] = o.id;
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
  std::vector<message_blocks::op> ops;
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
                           std::vector<message_blocks::op> ops;
                           blocks_.push(t.text, ops);
                           render(ops, out);
                         },
                         [&](int, const engine::finished_event& f) { on_finished(f, out); },
                         [](int, const engine::prompt_logprobs_event&) {},
                         [&](const engine::error_event& e) { out.push_back(dump_json(anthropic_error_object(e.err))); }});
  return out;
}

}  // namespace vks::api
