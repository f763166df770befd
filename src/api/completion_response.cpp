// Completions responses and chunk streams (completion_response.hpp).
#include "api/completion_response.hpp"

#include <type_traits>

#include "api/errors.hpp"

namespace vks::api {

namespace {

void add_prompt_logprobs(completion_logprobs& out, const engine::prompt_logprobs_event& p, int top_k) {
  out.add_unscored(p.first_token.text);
  for (std::size_t i = 1; i < p.positions.size(); ++i)
    if (p.positions[i]) out.add(*p.positions[i], top_k);
}

}  // namespace

// ---- non-streaming ----------------------------------------------------------------

completion_accumulator::completion_accumulator(completion_output_settings s)
    : settings_(std::move(s)), tracker_(settings_.n_prompts, settings_.n) {
  choices_.resize(static_cast<std::size_t>(settings_.n_prompts * settings_.n));
  prompt_lps_.resize(static_cast<std::size_t>(settings_.n_prompts));
}

template <class E>
void completion_accumulator::add_piece(choice_state& c, const E& piece) {
  c.text += piece.text;
  if (settings_.logprobs) c.logprobs.insert(c.logprobs.end(), piece.logprobs.begin(), piece.logprobs.end());
  if (settings_.return_token_ids) c.ids.insert(c.ids.end(), piece.tokens.begin(), piece.tokens.end());
  if constexpr (std::is_same_v<E, engine::finished_event>) {
    c.finish = piece.reason;
    c.stop = piece.stop;
  }
}

void completion_accumulator::on_event(int p, const engine::event& ev) {
  route_event(tracker_, p, ev,
              overloaded{[&](int i, const auto& piece) { add_piece(choices_[static_cast<std::size_t>(i)], piece); },
                         [&](int, const engine::prompt_logprobs_event& pl) { prompt_lps_[static_cast<std::size_t>(p)] = pl; },
                         [](const engine::error_event&) {}});
}

json completion_accumulator::build(const response_meta& meta) const {
  json j;
  j["id"] = meta.id;
  j["object"] = "text_completion";
  j["created"] = meta.created;
  j["model"] = meta.model;
  json arr = json::array();
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    const auto& c = choices_[i];
    const std::size_t p = i / static_cast<std::size_t>(settings_.n);
    std::string echo = settings_.echo && p < settings_.prompt_texts.size() ? settings_.prompt_texts[p] : std::string{};
    json choice;
    choice["index"] = static_cast<int>(i);
    choice["text"] = echo + c.text;
    if (settings_.logprobs) {
      completion_logprobs lp;
      const auto& plp = prompt_lps_[p];
      if (settings_.echo && plp) add_prompt_logprobs(lp, *plp, *settings_.logprobs);
      else if (settings_.echo) lp = completion_logprobs(code_points(echo));
      for (const auto& x : c.logprobs) lp.add(x, *settings_.logprobs);
      choice["logprobs"] = lp.take();
    } else {
      choice["logprobs"] = nullptr;
    }
    choice["finish_reason"] = engine::to_string(c.finish);
    choice["stop_reason"] = stop_reason_json(c.stop);
    choice["prompt_logprobs"] = prompt_lps_[p] && settings_.prompt_logprobs ? prompt_logprobs_json(*prompt_lps_[p]) : json(nullptr);
    if (settings_.return_token_ids) {
      choice["prompt_token_ids"] = p < settings_.prompt_token_ids.size() ? json(settings_.prompt_token_ids[p]) : json::array();
      choice["token_ids"] = c.ids;
    }
    arr.push_back(std::move(choice));
  }
  j["choices"] = std::move(arr);
  j["service_tier"] = nullptr;
  j["system_fingerprint"] = nullptr;
  j["usage"] = usage_json(tracker_.usage(), settings_.options);
  j["kv_transfer_params"] = nullptr;
  return j;
}

// ---- streaming ----------------------------------------------------------------------

completion_stream::completion_stream(response_meta meta, completion_stream_settings s)
    : meta_(std::move(meta)), settings_(std::move(s)), tracker_(settings_.output.n_prompts, settings_.output.n) {
  const auto& o = settings_.output;
  choices_.resize(static_cast<std::size_t>(o.n_prompts * o.n));
  prompt_lps_.resize(static_cast<std::size_t>(o.n_prompts));
}

std::string completion_stream::chunk(int index, std::string text, const json& logprobs, const json& finish_reason,
                                     const json& stop_reason, int n_prompt_tokens, int n_completion_tokens,
                                     choice_state* ids, int prompt_index) const {
  json j;
  j["id"] = meta_.id;
  j["object"] = "text_completion";
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  json choice;
  choice["index"] = index;
  choice["text"] = std::move(text);
  choice["logprobs"] = logprobs;
  choice["finish_reason"] = finish_reason;
  choice["stop_reason"] = stop_reason;
  if (ids && settings_.output.return_token_ids) {
    const auto& all = settings_.output.prompt_token_ids;
    const auto p = static_cast<std::size_t>(prompt_index);
    if (!ids->sent_prompt_ids) choice["prompt_token_ids"] = p < all.size() ? json(all[p]) : json::array();
    ids->sent_prompt_ids = true;
    choice["token_ids"] = ids->pending_ids;
    ids->pending_ids.clear();
  }
  j["choices"] = json::array({std::move(choice)});
  if (settings_.include_usage && settings_.continuous_usage_stats)
    j["usage"] = usage_json({n_prompt_tokens, n_completion_tokens, 0}, settings_.output.options);
  else
    j["usage"] = nullptr;
  return dump_json(j);
}

void completion_stream::echo_logprobs(int p, choice_state& c) {
  const auto& o = settings_.output;
  const auto& plp = prompt_lps_[static_cast<std::size_t>(p)];
  if (plp) add_prompt_logprobs(c.lp, *plp, *o.logprobs);
  else c.lp = completion_logprobs(code_points(o.prompt_texts[static_cast<std::size_t>(p)]));
}

std::string completion_stream::begin_text(int p, choice_state& c, std::string_view text) {
  const auto& o = settings_.output;
  std::string out;
  if (!c.started) {
    c.started = true;
    if (o.echo && static_cast<std::size_t>(p) < o.prompt_texts.size()) {
      out = o.prompt_texts[static_cast<std::size_t>(p)];
      if (o.logprobs) echo_logprobs(p, c);
    }
  }
  out += text;
  return out;
}

template <class E>
void completion_stream::piece_chunk(int p, int index, const E& piece, std::vector<std::string>& out) {
  const auto& o = settings_.output;
  auto& c = choices_[static_cast<std::size_t>(index)];
  constexpr bool last = std::is_same_v<E, engine::finished_event>;
  if (o.return_token_ids) c.pending_ids.insert(c.pending_ids.end(), piece.tokens.begin(), piece.tokens.end());
  std::string text = begin_text(p, c, piece.text);
  if (o.logprobs)
    for (const auto& x : piece.logprobs) c.lp.add(x, *o.logprobs);
  const bool lp = o.logprobs && !c.lp.empty();
  if (!last && text.empty() && !lp) return;
  json finish = nullptr, stop = nullptr;
  int n_prompt = 0;
  if constexpr (last) {
    finish = engine::to_string(piece.reason);
    stop = stop_reason_json(piece.stop);
    n_prompt = piece.seq_usage.n_prompt_tokens;
  } else if (static_cast<std::size_t>(p) < settings_.n_prompt_tokens.size()) {
    n_prompt = settings_.n_prompt_tokens[static_cast<std::size_t>(p)];
  }
  out.push_back(chunk(index, std::move(text), lp ? c.lp.take() : json(nullptr), finish, stop, n_prompt,
                      tracker_.n_completion_tokens(index), &c, p));
}

std::vector<std::string> completion_stream::on_event(int p, const engine::event& ev) {
  std::vector<std::string> out;
  route_event(tracker_, p, ev,
              overloaded{[&](int i, const engine::token_event& t) { piece_chunk(p, i, t, out); },
                         [&](int i, const engine::finished_event& f) {
                           if (f.reason != engine::finish_reason::abort) piece_chunk(p, i, f, out);
                         },
                         [&](int, const engine::prompt_logprobs_event& pl) { prompt_lps_[static_cast<std::size_t>(p)] = pl; },
                         [&](const engine::error_event& e) { out.push_back(dump_json(error_object(e.err))); }});
  return out;
}

std::vector<std::string> completion_stream::finish() {
  std::vector<std::string> out;
  if (tracker_.error() || !settings_.include_usage) return out;
  json j;
  j["id"] = meta_.id;
  j["object"] = "text_completion";
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  j["choices"] = json::array();
  j["usage"] = usage_json(tracker_.usage(), settings_.output.options);
  out.push_back(dump_json(j));
  return out;
}

}  // namespace vks::api
