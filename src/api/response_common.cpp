// Shared response pieces (response_common.hpp).
#include "api/response_common.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

namespace vks::api {

std::string random_uuid_hex() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  std::uint64_t hi = gen(), lo = gen();
  hi = (hi & ~0xF000ull) | 0x4000ull;                   // version 4
  lo = (lo & ~(0xC000ull << 48)) | (0x8000ull << 48);   // RFC 4122 variant
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

response_meta make_meta(std::string_view prefix, std::string model) {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return {std::string(prefix) + random_uuid_hex(),
          std::chrono::duration_cast<std::chrono::seconds>(now).count(), std::move(model)};
}

json usage_json(const usage_totals& u, const output_options& opt) {
  json j;
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  if (opt.prompt_tokens_details) {
    json d;
    d["cached_tokens"] = u.cached_tokens;
    j["prompt_tokens_details"] = std::move(d);
  } else {
    j["prompt_tokens_details"] = nullptr;
  }
  return j;
}

json stop_reason_json(const engine::stop_reason& r) {
  if (const auto* s = std::get_if<std::string>(&r)) return *s;
  if (const auto* t = std::get_if<engine::token_id>(&r)) return *t;
  return nullptr;
}

double printable_logprob(float lp) { return std::isfinite(lp) ? static_cast<double>(lp) : -9999.0; }

json token_bytes_json(std::string_view text) {
  json b = json::array();
  for (unsigned char c : text) b.push_back(static_cast<int>(c));
  return b;
}

namespace {
json chat_token_json(const engine::token_logprob& t) {
  json j;
  j["token"] = t.text;
  j["logprob"] = printable_logprob(t.logprob);
  j["bytes"] = token_bytes_json(t.text);
  return j;
}
}  // namespace

json chat_logprobs_json(std::span<const engine::position_logprobs> lps, int top_k) {
  json content = json::array();
  for (const auto& p : lps) {
    json e = chat_token_json(p.token);
    json top = json::array();
    for (std::size_t i = 0; i < p.top.size() && static_cast<int>(i) < top_k; ++i) top.push_back(chat_token_json(p.top[i]));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  json j;
  j["content"] = std::move(content);
  return j;
}

json prompt_logprobs_json(const engine::prompt_logprobs_event& ev) {
  json out = json::array();
  for (const auto& pos : ev.positions) {
    if (!pos) {
      out.push_back(nullptr);
      continue;
    }
    json m = json::object();
    auto add = [&](const engine::token_logprob& t) {
      std::string key = std::to_string(t.id);
      if (m.contains(key)) return;
      json e;
      e["logprob"] = printable_logprob(t.logprob);
      e["rank"] = t.rank;
      e["decoded_token"] = t.text;
      m[key] = std::move(e);
    };
    add(pos->token);
    for (const auto& t : pos->top) add(t);
    out.push_back(std::move(m));
  }
  return out;
}

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

void completion_logprobs::add_unscored(std::string_view token_text) {
  tokens_.push_back(token_text);
  token_logprobs_.push_back(nullptr);
  top_.push_back(nullptr);
  offsets_.push_back(offset_);
  offset_ += code_points(token_text);
}

void completion_logprobs::add(const engine::position_logprobs& lp, int top_k) {
  tokens_.push_back(lp.token.text);
  token_logprobs_.push_back(printable_logprob(lp.token.logprob));
  json top = json::object();
  for (std::size_t i = 0; i < lp.top.size() && static_cast<int>(i) < top_k; ++i)
    if (!top.contains(lp.top[i].text)) top[lp.top[i].text] = printable_logprob(lp.top[i].logprob);
  if (top_k > 0 && !top.contains(lp.token.text)) top[lp.token.text] = printable_logprob(lp.token.logprob);
  top_.push_back(std::move(top));
  offsets_.push_back(offset_);
  offset_ += code_points(lp.token.text);
}

json completion_logprobs::take() {
  json j;
  j["text_offset"] = std::move(offsets_);
  j["token_logprobs"] = std::move(token_logprobs_);
  j["tokens"] = std::move(tokens_);
  j["top_logprobs"] = std::move(top_);
  tokens_ = json::array();
  token_logprobs_ = json::array();
  top_ = json::array();
  offsets_ = json::array();
  return j;
}

}  // namespace vks::api
