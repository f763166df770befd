// The three job outputs (chat, completions, LMI) over the api stream and accumulator builders.
#include "server/job_output.hpp"

#include <utility>
#include <variant>

namespace vks::server {
namespace {

// `chat_accumulator` has no echo setting: the echo goes in front of each message here.
void prepend_echo(api::json& body, const std::string& echo) {
  for (auto& c : body["choices"]) {
    auto& content = c["message"]["content"];
    content = echo + (content.is_string() ? content.get<std::string>() : std::string{});
  }
}

class chat_job_output final : public job_output {
 public:
  explicit chat_job_output(const chat_job& job) : meta_(job.meta) {
    if (job.req.echo && !job.prompt.echo.empty()) echo_ = job.prompt.echo;
    if (!job.req.stream.stream) {
      acc_.emplace(job.out);
      return;
    }
    api::chat_stream_settings ss;
    ss.output = job.out;
    ss.include_usage = job.req.stream.include_usage;
    ss.continuous_usage_stats = job.req.stream.continuous_usage_stats;
    ss.n_prompt_tokens = static_cast<int>(job.prompt.ids.size());
    ss.echo = echo_;
    cs_.emplace(job.meta, std::move(ss));
  }
  bool streaming() const override { return cs_.has_value(); }
  std::vector<std::string> start() override { return cs_ ? cs_->start() : std::vector<std::string>{}; }
  std::vector<std::string> on_event(const tagged_event& ev) override {
    if (cs_) return cs_->on_event(ev.ev);
    acc_->on_event(ev.ev);
    return {};
  }
  std::vector<std::string> finish() override { return cs_ ? cs_->finish() : std::vector<std::string>{}; }
  bool done() const override { return cs_ ? cs_->done() : acc_->done(); }
  std::optional<vks::error> error() const override { return acc_ ? acc_->error() : std::nullopt; }
  api::json build() const override {
    api::json body = acc_->build(meta_);
    if (echo_) prepend_echo(body, *echo_);
    return body;
  }

 private:
  api::response_meta meta_;
  std::optional<std::string> echo_;
  std::optional<api::chat_stream> cs_;
  std::optional<api::chat_accumulator> acc_;
};

// Preset events (echo-only requests: no engine) are fed first: at once when accumulating,
// as the stream's first payloads when streaming.
class completion_job_output final : public job_output {
 public:
  explicit completion_job_output(const completion_job& job) : meta_(job.meta), preset_(job.preset) {
    if (!job.req.stream.stream) {
      acc_.emplace(job.out);
      for (const auto& ev : preset_) acc_->on_event(ev.source, ev.ev);
      return;
    }
    api::completion_stream_settings ss;
    ss.output = job.out;
    ss.include_usage = job.req.stream.include_usage;
    ss.continuous_usage_stats = job.req.stream.continuous_usage_stats;
    for (const auto& p : job.prompts) ss.n_prompt_tokens.push_back(static_cast<int>(p.ids.size()));
    cs_.emplace(job.meta, std::move(ss));
  }
  bool streaming() const override { return cs_.has_value(); }
  std::vector<std::string> start() override {
    std::vector<std::string> out;
    if (!cs_) return out;
    for (const auto& ev : preset_)
      for (auto& p : cs_->on_event(ev.source, ev.ev)) out.push_back(std::move(p));
    return out;
  }
  std::vector<std::string> on_event(const tagged_event& ev) override {
    if (cs_) return cs_->on_event(ev.source, ev.ev);
    acc_->on_event(ev.source, ev.ev);
    return {};
  }
  std::vector<std::string> finish() override { return cs_ ? cs_->finish() : std::vector<std::string>{}; }
  bool done() const override { return cs_ ? cs_->done() : acc_->done(); }
  std::optional<vks::error> error() const override { return acc_ ? acc_->error() : std::nullopt; }
  api::json build() const override { return acc_->build(meta_); }

 private:
  api::response_meta meta_;
  std::vector<tagged_event> preset_;
  std::optional<api::completion_stream> cs_;
  std::optional<api::completion_accumulator> acc_;
};

class lmi_job_output final : public job_output {
 public:
  explicit lmi_job_output(const lmi_job& job) {
    if (job.stream) ls_.emplace(job.out);
    else acc_.emplace(job.out);
  }
  bool streaming() const override { return ls_.has_value(); }
  std::vector<std::string> on_event(const tagged_event& ev) override {
    if (ls_) return ls_->on_event(ev.ev);
    acc_->on_event(ev.ev);
    return {};
  }
  bool done() const override { return ls_ ? ls_->done() : acc_->done(); }
  std::optional<vks::error> error() const override { return acc_ ? acc_->error() : std::nullopt; }
  api::json build() const override { return acc_->build(); }

 private:
  std::optional<api::lmi_stream> ls_;
  std::optional<api::lmi_accumulator> acc_;
};

// Embeddings: never streamed; each input's embedding_event is its terminal event.
class embedding_job_output final : public job_output {
 public:
  explicit embedding_job_output(const embedding_job& job) : acc_(job.out) {}
  bool streaming() const override { return false; }
  std::vector<std::string> on_event(const tagged_event& ev) override {
    acc_.on_event(ev.source, ev.ev);
    return {};
  }
  bool done() const override { return acc_.done(); }
  std::optional<vks::error> error() const override { return acc_.error(); }
  api::json build() const override { return acc_.build(); }

 private:
  api::embedding_accumulator acc_;
};

}  // namespace

std::unique_ptr<job_output> make_output(const generation_job& job) {
  if (const auto* c = std::get_if<chat_job>(&job)) {
    if (c->format == chat_format::messages) return make_messages_output(*c);
    if (c->format == chat_format::responses) return make_responses_output(*c);
    return std::make_unique<chat_job_output>(*c);
  }
  if (const auto* p = std::get_if<completion_job>(&job)) return std::make_unique<completion_job_output>(*p);
  if (const auto* m = std::get_if<embedding_job>(&job)) return std::make_unique<embedding_job_output>(*m);
  return std::make_unique<lmi_job_output>(std::get<lmi_job>(job));
}

bool job_streams(const generation_job& job) {
  if (const auto* c = std::get_if<chat_job>(&job)) return c->req.stream.stream;
  if (const auto* p = std::get_if<completion_job>(&job)) return p->req.stream.stream;
  if (std::holds_alternative<embedding_job>(job)) return false;
  return std::get<lmi_job>(job).stream;
}

bool job_json_lines(const generation_job& job) { return std::holds_alternative<lmi_job>(job); }

bool job_typed_events(const generation_job& job) {
  const auto* c = std::get_if<chat_job>(&job);
  return c && c->format != chat_format::chat;
}

error_shape job_error_shape(const generation_job& job) {
  const auto* c = std::get_if<chat_job>(&job);
  return c && c->format == chat_format::messages ? error_shape::anthropic : error_shape::openai;
}

}  // namespace vks::server
