// OpenAI Responses objects and event streams (responses_response.hpp).
#include "api/responses_response.hpp"

#include "api/errors.hpp"

namespace vks::api {
namespace {

using kind = content_blocks::kind;
using what = content_blocks::op::what;

json new_item(const content_blocks::op& o) {
  json item;
  if (o.k == kind::thinking) {
    item["id"] = "rs_" + random_uuid_hex();
    item["type"] = "reasoning";
    item["summary"] = json::array();
    item["content"] = json::array({{{"type", "reasoning_text"}, {"text", ""}}});
  } else if (o.k == kind::text) {
    item["id"] = "msg_" + random_uuid_hex();
    item["type"] = "message";
    item["role"] = "assistant";
    item["status"] = "completed";
    item["content"] = json::array({{{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}, {"logprobs", json::array()}}});
  } else {
    item["id"] = "fc_" + random_uuid_hex();
    item["type"] = "function_call";
    item["call_id"] = "call_" + o.id;
    item["name"] = o.name;
    item["arguments"] = "";
    item["status"] = "completed";
  }
  return item;
}

// The item as output_item.added shows it: nothing generated yet, in progress.
json added_item(json item) {
  if (item["type"] == "reasoning") item["content"] = json::array();
  if (item["type"] == "message") {
    item["content"] = json::array();
    item["status"] = "in_progress";
  }
  if (item["type"] == "function_call") {
    item["arguments"] = "";
    item["status"] = "in_progress";
  }
  return item;
}

std::string& item_text(json& item) {
  if (item["type"] == "function_call") return item["arguments"].get_ref<std::string&>();
  return item["content"][0]["text"].get_ref<std::string&>();
}

}  // namespace

std::size_t response_items::apply(const content_blocks::op& o) {
  const auto i = static_cast<std::size_t>(o.index);
  if (o.w == what::start) items_.push_back(new_item(o));
  else if (o.w == what::delta) item_text(items_[i]) += o.text;
  return i;
}

json responses_usage_json(const usage_totals& u) {
  json j;
  j["input_tokens"] = u.prompt_tokens;
  j["input_tokens_details"] = {{"cached_tokens", u.cached_tokens}};
  j["output_tokens"] = u.completion_tokens;
  j["output_tokens_details"] = {{"reasoning_tokens", 0}};
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  return j;
}

json response_object(const response_meta& meta, const json& echo, std::string_view status, const json& output,
                     const json& usage, const json& incomplete_details, const json& error) {
  json j;
  j["id"] = meta.id;
  j["object"] = "response";
  j["created_at"] = meta.created;
  j["status"] = status;
  j["background"] = false;
  j["error"] = error;
  j["incomplete_details"] = incomplete_details;
  j["model"] = meta.model;
  j["output"] = output;
  for (auto it = echo.begin(); it != echo.end(); ++it) j[it.key()] = it.value();
  j["usage"] = usage;
  return j;
}

// ---- non-streaming ---------------------------------------------------------------------

responses_accumulator::responses_accumulator(responses_output_settings s)
    : settings_(std::move(s)), blocks_(settings_.text), tracker_(1, 1) {}

void responses_accumulator::on_event(const engine::event& ev) {
  std::vector<content_blocks::op> ops;
  route_event(tracker_, 0, ev,
              overloaded{[&](int, const engine::token_event& t) { blocks_.push(t.text, ops); },
                         [&](int, const engine::finished_event& f) {
                           blocks_.push(f.text, ops);
                           blocks_.finish(ops);
                           length_ = f.reason == engine::finish_reason::length;
                         },
                         [](int, const engine::prompt_logprobs_event&) {}, [](const engine::error_event&) {}});
  for (const auto& o : ops) items_.apply(o);
}

json responses_accumulator::build(const response_meta& meta) const {
  const json details = length_ ? json{{"reason", "max_output_tokens"}} : json(nullptr);
  return response_object(meta, settings_.echo, length_ ? "incomplete" : "completed", items_.items(),
                         responses_usage_json(tracker_.usage()), details);
}

// ---- streaming -------------------------------------------------------------------------

responses_stream::responses_stream(response_meta meta, responses_output_settings s)
    : meta_(std::move(meta)), settings_(std::move(s)), blocks_(settings_.text), tracker_(1, 1) {}

void responses_stream::emit(json ev, std::vector<std::string>& out) {
  ev["sequence_number"] = sequence_++;
  out.push_back(dump_json(ev));
}

std::vector<std::string> responses_stream::start() {
  std::vector<std::string> out;
  final_ = response_object(meta_, settings_.echo, "in_progress", json::array(), nullptr);
  emit({{"type", "response.created"}, {"response", final_}}, out);
  emit({{"type", "response.in_progress"}, {"response", final_}}, out);
  return out;
}

void responses_stream::render(const std::vector<content_blocks::op>& ops, std::vector<std::string>& out) {
  for (const auto& o : ops) {
    const std::size_t i = items_.apply(o);
    const json& item = items_.item(i);
    const json id = item["id"];
    const auto index = static_cast<int>(i);
    const std::string type = item["type"];
    if (o.w == what::start) {
      emit({{"type", "response.output_item.added"}, {"output_index", index}, {"item", added_item(item)}}, out);
      if (type != "function_call")
        emit({{"type", "response.content_part.added"}, {"item_id", id}, {"output_index", index}, {"content_index", 0},
              {"part", item["content"][0]}}, out);
    } else if (o.w == what::delta) {
      const char* ev = type == "reasoning" ? "response.reasoning_text.delta"
                       : type == "message" ? "response.output_text.delta"
                                           : "response.function_call_arguments.delta";
      json d = {{"type", ev}, {"item_id", id}, {"output_index", index}};
      if (type != "function_call") d["content_index"] = 0;
      d["delta"] = o.text;
      if (type == "message") d["logprobs"] = json::array();
      emit(std::move(d), out);
    } else if (type == "function_call") {
      emit({{"type", "response.function_call_arguments.done"}, {"item_id", id}, {"output_index", index},
            {"name", item["name"]}, {"arguments", item["arguments"]}}, out);
      emit({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}}, out);
    } else {
      const json& part = item["content"][0];
      json done = {{"type", type == "reasoning" ? "response.reasoning_text.done" : "response.output_text.done"},
                   {"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", part["text"]}};
      if (type == "message") done["logprobs"] = json::array();
      emit(std::move(done), out);
      emit({{"type", "response.content_part.done"}, {"item_id", id}, {"output_index", index}, {"content_index", 0},
            {"part", part}}, out);
      emit({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}}, out);
    }
  }
}

void responses_stream::on_finished(const engine::finished_event& f, std::vector<std::string>& out) {
  std::vector<content_blocks::op> ops;
  blocks_.push(f.text, ops);
  blocks_.finish(ops);
  render(ops, out);
  const bool length = f.reason == engine::finish_reason::length;
  const json details = length ? json{{"reason", "max_output_tokens"}} : json(nullptr);
  final_ = response_object(meta_, settings_.echo, length ? "incomplete" : "completed", items_.items(),
                           responses_usage_json(tracker_.usage()), details);
  emit({{"type", length ? "response.incomplete" : "response.completed"}, {"response", final_}}, out);
}

std::vector<std::string> responses_stream::on_event(const engine::event& ev) {
  std::vector<std::string> out;
  route_event(tracker_, 0, ev,
              overloaded{[&](int, const engine::token_event& t) {
                           std::vector<content_blocks::op> ops;
                           blocks_.push(t.text, ops);
                           render(ops, out);
                         },
                         [&](int, const engine::finished_event& f) { on_finished(f, out); },
                         [](int, const engine::prompt_logprobs_event&) {},
                         [&](const engine::error_event& e) {
                           const int status = http_status(e.err.code);
                           emit({{"type", "error"}, {"code", error_type(status)}, {"message", e.err.message},
                                 {"param", e.err.param.empty() ? json(nullptr) : json(e.err.param)}}, out);
                         }});
  return out;
}

}  // namespace vks::api
