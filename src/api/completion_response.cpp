// Completions responses and chunk streams (completion_response.hpp).
#include "api/completion_response.hpp"

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

completion_accumulator::completion_accumulator(completion_output_settings s) : settings_(std::move(s)) {
  choices_.resize(static_cast<std::size_t>(settings_.n_prompts * settings_.n));
  prompt_lps_.resize(static_cast<std::size_t>(settings_.n_prompts));
  prompt_tokens_.assign(static_cast<std::size_t>(settings_.n_prompts), -1);
}

void completion_accumulator::on_event(int p, const engine::event& ev) {
  if (done() || p < 0 || p >= settings_.n_prompts) return;
  auto choice_of = [&](int seq) -> choice_state* {
    if (seq < 0 || seq >= settings_.n) return nullptr;
    return &choices_[static_cast<std::size_t>(p * settings_.n + seq)];
  };
  if (const auto* t = std::get_if<engine::token_event>(&ev)) {
    auto* c = choice_of(t->seq);
    if (!c || c->finished) return;
    c->text += t->text;
    if (settings_.logprobs) c->logprobs.insert(c->logprobs.end(), t->logprobs.begin(), t->logprobs.end());
    if (settings_.return_token_ids) c->ids.insert(c->ids.end(), t->tokens.begin(), t->tokens.end());
  } else if (const auto* f = std::get_if<engine::finished_event>(&ev)) {
    auto* c = choice_of(f->seq);
    if (!c || c->finished) return;
    c->text += f->text;
    if (settings_.logprobs) c->logprobs.insert(c->logprobs.end(), f->logprobs.begin(), f->logprobs.end());
    if (settings_.return_token_ids) c->ids.insert(c->ids.end(), f->tokens.begin(), f->tokens.end());
    c->finished = true;
    c->finish = f->reason;
    c->stop = f->stop;
    if (prompt_tokens_[static_cast<std::size_t>(p)] < 0) usage_.cached_tokens += f->seq_usage.n_cached_tokens;
    prompt_tokens_[static_cast<std::size_t>(p)] = f->seq_usage.n_prompt_tokens;
    usage_.completion_tokens += f->seq_usage.n_completion_tokens;
    ++n_finished_;
  } else if (const auto* pl = std::get_if<engine::prompt_logprobs_event>(&ev)) {
    prompt_lps_[static_cast<std::size_t>(p)] = *pl;
  } else if (const auto* e = std::get_if<engine::error_event>(&ev)) {
    error_ = e->err;
  }
}

json completion_accumulator::build(const response_meta& meta) const {
  json j;
  j["id"] = meta.id;
  j["object"] = "text_completion";
  j["created"] = meta.created;
  j["model"] = meta.model;
  json arr = json::array();
  usage_totals usage = usage_;
  for (int pt : prompt_tokens_) usage.prompt_tokens += pt > 0 ? pt : 0;
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
  j["usage"] = usage_json(usage, settings_.options);
  j["kv_transfer_params"] = nullptr;
  return j;
}

// ---- streaming ----------------------------------------------------------------------

completion_stream::completion_stream(response_meta meta, completion_stream_settings s)
    : meta_(std::move(meta)), settings_(std::move(s)) {
  const auto& o = settings_.output;
  choices_.resize(static_cast<std::size_t>(o.n_prompts * o.n));
  prompt_lps_.resize(static_cast<std::size_t>(o.n_prompts));
  prompt_counted_.assign(static_cast<std::size_t>(o.n_prompts), false);
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

std::vector<std::string> completion_stream::on_event(int p, const engine::event& ev) {
  std::vector<std::string> out;
  const auto& o = settings_.output;
  if (done() || p < 0 || p >= o.n_prompts) return out;
  auto n_prompt = [&] {
    auto i = static_cast<std::size_t>(p);
    return i < settings_.n_prompt_tokens.size() ? settings_.n_prompt_tokens[i] : 0;
  };
  if (const auto* t = std::get_if<engine::token_event>(&ev)) {
    if (t->seq < 0 || t->seq >= o.n) return out;
    const int index = p * o.n + t->seq;
    auto& c = choices_[static_cast<std::size_t>(index)];
    if (c.finished) return out;
    c.n_completion_tokens = t->n_completion_tokens;
    if (o.return_token_ids) c.pending_ids.insert(c.pending_ids.end(), t->tokens.begin(), t->tokens.end());
    std::string text = begin_text(p, c, t->text);
    if (o.logprobs)
      for (const auto& x : t->logprobs) c.lp.add(x, *o.logprobs);
    const bool lp = o.logprobs && !c.lp.empty();
    if (text.empty() && !lp) return out;
    out.push_back(chunk(index, std::move(text), lp ? c.lp.take() : json(nullptr), nullptr, nullptr, n_prompt(),
                        c.n_completion_tokens, &c, p));
  } else if (const auto* f = std::get_if<engine::finished_event>(&ev)) {
    if (f->seq < 0 || f->seq >= o.n) return out;
    const int index = p * o.n + f->seq;
    auto& c = choices_[static_cast<std::size_t>(index)];
    if (c.finished) return out;
    c.finished = true;
    ++n_finished_;
    c.n_completion_tokens = f->seq_usage.n_completion_tokens;
    if (!prompt_counted_[static_cast<std::size_t>(p)]) {
      prompt_counted_[static_cast<std::size_t>(p)] = true;
      usage_.prompt_tokens += f->seq_usage.n_prompt_tokens;
      usage_.cached_tokens += f->seq_usage.n_cached_tokens;
    }
    usage_.completion_tokens += f->seq_usage.n_completion_tokens;
    if (f->reason == engine::finish_reason::abort) return out;
    if (o.return_token_ids) c.pending_ids.insert(c.pending_ids.end(), f->tokens.begin(), f->tokens.end());
    std::string text = begin_text(p, c, f->text);
    if (o.logprobs)
      for (const auto& x : f->logprobs) c.lp.add(x, *o.logprobs);
    const bool lp = o.logprobs && !c.lp.empty();
    out.push_back(chunk(index, std::move(text), lp ? c.lp.take() : json(nullptr), engine::to_string(f->reason),
                        stop_reason_json(f->stop), f->seq_usage.n_prompt_tokens, c.n_completion_tokens, &c, p));
  } else if (const auto* pl = std::get_if<engine::prompt_logprobs_event>(&ev)) {
    prompt_lps_[static_cast<std::size_t>(p)] = *pl;
  } else if (const auto* e = std::get_if<engine::error_event>(&ev)) {
    failed_ = true;
    out.push_back(dump_json(error_object(e->err)));
  }
  return out;
}

std::vector<std::string> completion_stream::finish() {
  std::vector<std::string> out;
  if (failed_ || !settings_.include_usage) return out;
  json j;
  j["id"] = meta_.id;
  j["object"] = "text_completion";
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  j["choices"] = json::array();
  j["usage"] = usage_json(usage_, settings_.output.options);
  out.push_back(dump_json(j));
  return out;
}

}  // namespace vks::api
