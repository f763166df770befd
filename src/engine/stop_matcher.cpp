// Stop strings and per-token stop rules (stop_matcher.hpp).
#include "engine/stop_matcher.hpp"

#include <algorithm>

namespace vks::engine {

stop_strings::stop_strings(std::vector<std::string> stops, bool include_stop)
    : stops_(std::move(stops)), include_(include_stop) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::size_t stop_strings::holdback() const {
  std::size_t best = 0;
  for (const auto& s : stops_) {
    std::size_t max_len = std::min(s.size() - 1, pending_.size());
    for (std::size_t len = max_len; len > best; --len)
      if (std::string_view(pending_).substr(pending_.size() - len) == std::string_view(s).substr(0, len)) {
        best = len;
        break;
      }
  }
  return best;
}

stop_strings::step stop_strings::push(std::string_view delta, bool arm) {
  step out;
  if (done_) return out;
  const std::size_t old = pending_.size();
  pending_.append(delta);
  if (!arm) armed_from_ = pending_.size();
  if (!stops_.empty() && arm) {
    // Earliest end wins, then the longest stop (earliest start). Only matches ending in
    // the new text can be new: older ends were checked by earlier calls.
    std::size_t best_end = std::string::npos, best_start = 0;
    const std::string* best = nullptr;
    for (const auto& s : stops_) {
      std::size_t from = old >= s.size() ? old - s.size() + 1 : 0;
      std::size_t pos = pending_.find(s, from);
      while (pos != std::string::npos && pos + s.size() <= armed_from_) pos = pending_.find(s, pos + 1);
      if (pos == std::string::npos) continue;
      std::size_t end = pos + s.size();
      if (end < best_end || (end == best_end && pos < best_start)) {
        best_end = end;
        best_start = pos;
        best = &s;
      }
    }
    if (best) {
      done_ = true;
      out.text = pending_.substr(0, include_ ? best_end : best_start);
      out.match = *best;
      pending_.clear();
      return out;
    }
  }
  std::size_t keep = holdback();
  out.text = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  armed_from_ = armed_from_ > out.text.size() ? armed_from_ - out.text.size() : 0;
  return out;
}

std::string stop_strings::flush() {
  std::string s = std::move(pending_);
  pending_.clear();
  armed_from_ = 0;
  return done_ ? std::string{} : s;
}

stop_checker::stop_checker(const sampling_params& params, std::span<const token_id> eos_ids)
    : strings_(params.stop, params.include_stop_str_in_output),
      stop_ids_(params.stop_token_ids),
      eos_ids_(eos_ids.begin(), eos_ids.end()),
      max_tokens_(params.max_tokens),
      min_tokens_(params.min_tokens),
      ignore_eos_(params.ignore_eos),
      include_stop_(params.include_stop_str_in_output) {}

bool stop_checker::is_eos(token_id t) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), t) != eos_ids_.end();
}

bool stop_checker::is_stop_id(token_id t) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), t) != stop_ids_.end();
}

stop_checker::outcome stop_checker::on_token(token_id t, std::string_view text_delta, int n_generated) {
  outcome out;
  if (finished_) return out;
  const bool may_stop = n_generated >= min_tokens_;  // vLLM: output length >= min_tokens
  // Token-level stops: the stop id (or EOS) is reported; its text is dropped unless asked.
  const bool stop_id = may_stop && is_stop_id(t);
  const bool eos = may_stop && !ignore_eos_ && is_eos(t);
  if (stop_id || eos) {
    finished_ = true;
    auto s = strings_.push(include_stop_ ? text_delta : std::string_view{}, true);
    out.text = std::move(s.text);
    if (s.match) {
      out.finish = finish_reason::stop;
      out.reason = std::move(*s.match);
      return out;
    }
    out.text += strings_.flush();
    out.finish = finish_reason::stop;
    if (stop_id) out.reason = t;
    return out;
  }
  auto s = strings_.push(text_delta, may_stop);
  out.text = std::move(s.text);
  if (s.match) {
    finished_ = true;
    out.finish = finish_reason::stop;
    out.reason = std::move(*s.match);
    return out;
  }
  if (max_tokens_ >= 0 && n_generated >= max_tokens_) {
    finished_ = true;
    out.text += strings_.flush();
    out.finish = finish_reason::length;
  }
  return out;
}

}  // namespace vks::engine
