// LMI/TGI schema responses (lmi_response.hpp).
#include "api/lmi_response.hpp"

#include "api/errors.hpp"
#include "api/response_common.hpp"

namespace vks::api {

const char* lmi_finish_reason(engine::finish_reason r, const engine::stop_reason& s) noexcept {
  switch (r) {
    case engine::finish_reason::length: return "length";
    case engine::finish_reason::stop: return std::holds_alternative<std::monostate>(s) ? "eos_token" : "stop_sequence";
    case engine::finish_reason::abort: return "abort";
    case engine::finish_reason::error: return "error";
  }
  return "error";
}

namespace {

// Token entries of one event: ids with their text and log_prob (null when unknown).
template <class E>
void append_tokens(const E& t, json& out) {
  for (std::size_t i = 0; i < t.tokens.size(); ++i) {
    json tok;
    tok["id"] = t.tokens[i];
    if (i < t.logprobs.size()) {
      tok["text"] = t.logprobs[i].token.text;
      tok["log_prob"] = printable_logprob(t.logprobs[i].token.logprob);
    } else {
      tok["text"] = i + 1 == t.tokens.size() ? t.text : std::string{};
      tok["log_prob"] = nullptr;
    }
    out.push_back(std::move(tok));
  }
}

json details_json(const std::string& finish, const json& tokens, const std::string& inputs) {
  json d;
  d["finish_reason"] = finish;
  d["generated_tokens"] = tokens.size();
  d["inputs"] = inputs;
  d["tokens"] = tokens;
  return d;
}

}  // namespace

void lmi_accumulator::on_event(const engine::event& ev) {
  route_event(tracker_, 0, ev,
              overloaded{[&](int, const engine::token_event& t) {
                           text_ += t.text;
                           append_tokens(t, tokens_);
                         },
                         [&](int, const engine::finished_event& f) {
                           text_ += f.text;
                           append_tokens(f, tokens_);
                           finish_ = lmi_finish_reason(f.reason, f.stop);
                         },
                         [&](int, const engine::prompt_logprobs_event& p) {
                           for (const auto& pos : p.positions)
                             if (pos) prefill_.push_back({{"id", pos->token.id}, {"text", pos->token.text},
                                                          {"log_prob", printable_logprob(pos->token.logprob)}});
                         },
                         [](const engine::error_event&) {}});
}

json lmi_accumulator::build() const {
  json j;
  j["generated_text"] = settings_.return_full_text ? settings_.prompt_text + text_ : text_;
  if (settings_.details) {
    j["details"] = details_json(finish_, tokens_, settings_.prompt_text);
    if (settings_.prefill) j["details"]["prefill"] = prefill_;
  }
  return j;
}

template <class E>
void lmi_stream::token_lines(const E& piece, std::vector<std::string>& out) {
  text_ += piece.text;
  json fresh = json::array();
  append_tokens(piece, fresh);
  for (auto& tok : fresh) {
    if (held_) out.push_back(dump_json(*held_));
    tokens_.push_back(tok);
    json line;
    line["token"] = std::move(tok);
    held_ = std::move(line);
  }
}

std::vector<std::string> lmi_stream::on_event(const engine::event& ev) {
  std::vector<std::string> out;
  route_event(tracker_, 0, ev,
              overloaded{[&](int, const engine::token_event& t) { token_lines(t, out); },
                         [&](int, const engine::finished_event& f) {
                           if (f.reason == engine::finish_reason::abort) return;
                           token_lines(f, out);
                           json last = held_ ? std::move(*held_) : json::object();
                           held_.reset();
                           last["generated_text"] = settings_.return_full_text ? settings_.prompt_text + text_ : text_;
                           if (settings_.details)
                             last["details"] = details_json(lmi_finish_reason(f.reason, f.stop), tokens_, settings_.prompt_text);
                           out.push_back(dump_json(last));
                         },
                         [](int, const engine::prompt_logprobs_event&) {},
                         [&](const engine::error_event& e) {
                           if (held_) out.push_back(dump_json(*held_));
                           held_.reset();
                           json line = error_object(e.err);
                           json d;
                           d["finish_reason"] = "error";
                           line["details"] = std::move(d);
                           out.push_back(dump_json(line));
                         }});
  return out;
}

}  // namespace vks::api
